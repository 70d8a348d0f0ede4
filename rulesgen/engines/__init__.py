"""The programs outside rulesgen: finding the binaries, promtool (parse, unit tests, replays and plots),
vmalert's replay mode and backfill, and Grafana's HTTP API (push)."""
