"""PromQL, parsed once: the text helpers (label sets, numbers, matchers), the syntax tree and its printer,
what each rule reads (graph), which labels an expression can carry, and where a rule can run when the
fleet is sharded (tiers). Imports nothing of rulesgen above the base modules."""
