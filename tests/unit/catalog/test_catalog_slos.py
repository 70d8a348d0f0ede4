"""rulesgen/catalog/slos.py: slos.yaml's burn tiers and SLOs, each problem at its line."""
from rulesgen.catalog.slos import read_slos
from rulesgen.errors import Collector
from unit_yaml import printed, written

SLOS = """\
burn_tiers:
  - {name: fast, alert: page, long: 1h, short: 5m, budget_share: 0.02}
  - {name: slow, alert: ticket, long: 1d, short: 2h, budget_share: 0.1}
slos:
  - id: gpu_capacity
    title: GPU capacity availability
    alert_prefix: GPUCapacitySLO
    objective: 99.5
    objective_source: a starting point
    period: 30d
    input_absent_for: 15m
    meaning: good over total
    why: the whole fleet
    runbook: {check: [which modes], do: [repair]}
"""


def test_a_valid_file_reads_into_tiers_and_slos(tmp_path):
    errors = Collector()
    tiers, slos = read_slos(written(tmp_path, "slos.yaml", SLOS)[1], errors)
    assert printed(errors) == []
    assert [(t.name, t.long, t.short, t.budget_share) for t in tiers] == [("fast", 3600, 300, 0.02), ("slow", 86400, 7200, 0.1)]
    (slo,) = slos
    assert (slo.id, slo.objective, slo.period, slo.check, slo.do) == ("gpu_capacity", 99.5, 30 * 86400, ("which modes",), ("repair",))


def test_each_problem_is_named_at_its_line(tmp_path):
    text = (SLOS.replace("short: 5m", "short: 2h").replace("name: slow", "name: fast")
            .replace("period: 30d", "period: 14d").replace("id: gpu_capacity", "id: gpu_hours"))
    path, doc = written(tmp_path, "slos.yaml", text)
    errors = Collector()
    read_slos(doc, errors)
    found = printed(errors)
    assert any(f"{path}:2:" in d and "short (7200s) must be below long (3600s)" in d for d in found), found
    assert any(f"{path}:3:" in d and "burn tier 'fast' is listed twice" in d for d in found), found
    assert any(f"{path}:5:" in d and "gpu_hours" in d for d in found), found
    assert any(f"{path}:10:" in d and "period must be 7d, 28d or 30d" in d for d in found), found
