"""render/openslo.py: names OpenSLO accepts, descriptions within its limit, one burn condition per policy."""
from rulesgen.model.slos import BurnTier, Slo, SloSpec
from rulesgen.render.openslo import DESCRIPTION_MAX, _description, _name, render_openslo
from rulesgen.render.yamltext import load


def _slo(meaning="Counts things. Twice.") -> Slo:
    spec = SloSpec(id="gpu_capacity", title="GPU capacity", alert_prefix="GPUCapacitySLO", objective=99.5,
                   objective_source="", period=30 * 86400, input_absent_for=900, meaning=meaning, why="")
    tiers = ((BurnTier("fast", "page", 3600, 300, 0.02), "page"), (BurnTier("slow", "ticket", 86400, 7200, 0.1), "ticket"))
    return Slo(spec=spec, objective=99.5, period=30 * 86400, tiers=tiers, group_by=("cluster",))


def test_names_are_dns_labels():
    assert _name("gpu_capacity") == "gpu-capacity" and _name("X__y!") == "x-y" and len(_name("a" * 99)) == 63


def test_a_long_meaning_is_cut_at_a_sentence_within_the_limit():
    text = ("A sentence that is long enough. " * 60).strip()
    cut = _description(text)
    assert len(cut) <= DESCRIPTION_MAX and cut.endswith(".") and text.startswith(cut)
    assert _description("short.") == "short."


def test_each_tier_is_a_policy_with_one_burn_condition():
    docs = [load(part) for part in render_openslo((_slo(),), {"gpu_capacity": ("bad", "total")}).text.split("---\n")]
    slo = docs[1]["spec"]
    assert [p["spec"]["conditions"][0]["spec"]["condition"]["threshold"] for p in slo["alertPolicies"]] == [14.4, 3.0]
    assert [len(p["spec"]["conditions"]) for p in slo["alertPolicies"]] == [1, 1]
    assert slo["indicator"]["spec"]["ratioMetric"]["bad"]["metricSource"]["spec"]["query"] == "bad"
