"""rulesgen/model/slos.py: burn factors from the period, the user's settings over the catalog's."""
import pytest

from rulesgen.model.slos import BurnTier, SloSettings, SloSpec, alert_name, effective

TIERS = (BurnTier("fast", "page", 3600, 300, 0.02), BurnTier("medium", "page", 21600, 1800, 0.05),
         BurnTier("slow", "ticket", 86400, 7200, 0.1), BurnTier("background", "ticket", 259200, 21600, 0.1))
SPEC = SloSpec("gpu_capacity", "GPU capacity", "GPUCapacitySLO", 99.5, "src", 30 * 86400, 900, "m", "w")


@pytest.mark.parametrize("days, factors", [(30, (14.4, 6, 3, 1)), (28, (13.44, 5.6, 2.8, 0.9333)), (7, (3.36, 1.4, 0.7, 0.2333))])
def test_the_factor_spends_the_budget_share_in_the_long_window(days, factors):
    assert [round(t.factor(days * 86400), 4) for t in TIERS] == list(factors)


def test_defaults_come_from_the_catalog_and_the_user_moves_or_drops_tiers():
    slo = effective(SPEC, TIERS, SloSettings("gpu_capacity"), "cluster")
    assert (slo.objective, slo.period, slo.group_by, slo.budget) == (99.5, 30 * 86400, ("cluster",), 0.005)
    assert [(t.name, c) for t, c in slo.tiers] == [("fast", "page"), ("medium", "page"), ("slow", "ticket"), ("background", "ticket")]
    user = SloSettings("gpu_capacity", objective=99.9, period=7 * 86400, tiers=(("medium", "ticket"), ("background", "off")),
                       group_by=("k8s_cluster", "modelName"))
    slo = effective(SPEC, TIERS, user, "k8s_cluster")
    assert (slo.objective, slo.period, slo.group_by, slo.budget) == (99.9, 7 * 86400, ("k8s_cluster", "modelName"), 0.001)
    assert [(t.name, c) for t, c in slo.tiers] == [("fast", "page"), ("medium", "ticket"), ("slow", "ticket")]
    assert alert_name(slo, "page") == "GPUCapacitySLOBurnPage"
