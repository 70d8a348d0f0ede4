"""group-size: a group holds more rules than max_rules_per_group (rulesgen/builders/engine_fit.py; Grafana Mimir's ruler
rejects a group above -ruler.max-rules-per-rule-group, default 20)."""
from .base import GROUP, Check, Group


def run(group: Group):
    max_rules = group.files.options.max_rules
    if max_rules and len(group.rules) > max_rules:
        yield group.hit(f"{len(group.rules)} rules, above {max_rules} (Grafana Mimir's ruler rejects a group above "
                        "-ruler.max-rules-per-rule-group, default 20; `rulesgen render` splits its own groups "
                        "at max_rules_per_group)")


CHECK = Check("group-size", "warning", False, "a group holds more rules than max_rules_per_group (Mimir rejects it "
              "above -ruler.max-rules-per-rule-group, default 20)", GROUP, run)
