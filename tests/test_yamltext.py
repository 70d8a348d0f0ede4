"""The generated YAML text: a scenario's input series dumped once and spliced into both engines' tests
reads exactly as a dump of the whole test would."""

import pytest
import yaml

from rulesgen.artifacts import series_block, with_series
from rulesgen.builders import vmalert_tests
from rulesgen.builders.promtool_tests import document
from rulesgen.render.yamltext import dump
from rulesgen.load.scenarios import Scenario

SERIES = (
    ('up{job="dcgm-exporter", instance="10.0.0.1:9400"}', "1x720"),
    ('DCGM_FI_DEV_GPU_TEMP{gpu="0", modelName="NVIDIA H100 80GB HBM3", Hostname="node-1"}', "64x12 63 _x3 stale"),
    ("{__name__=\"odd: quoted\", note='single'}", "- 1"),  # needs quotes in YAML
    ('DCGM_FI_DEV_POWER_USAGE{gpu="1"}', " ".join(str(i % 10) for i in range(60000))),  # folds at width
)


def scenario() -> Scenario:
    return Scenario(name="splice", path="fixtures/scenarios/splice.yaml", description="", interval=30,
                    evaluation_interval=60, duration=3600, series=SERIES, expect=(), also_allowed=())


@pytest.mark.parametrize("kind", ["promtool", "vmalert-tool"])
def test_a_spliced_test_is_the_dump_of_the_whole_test(kind):
    s = scenario()
    doc = (document(s, ["../../alerts/prometheus/health.yaml"], ["g1", "g2"], [{"expr": "vector(1)"}])
           if kind == "promtool" else vmalert_tests.scenario_test(s, ["rules/levels.yaml"], ["g1"]))
    spliced = with_series(doc, series_block(doc))
    assert spliced == dump(doc)
    assert yaml.safe_load(spliced)["tests"][0]["input_series"][2]["series"] == SERIES[2][0]
