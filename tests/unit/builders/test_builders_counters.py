"""The DCGM fields the rendered rules read: an alias counts for its field, catalog order, label fields apart."""
import pytest

from rulesgen.builders.counters import exporter_counters, fields_read
from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.model.output import Rule, RuleFile, RuleGroup, RuleSet


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(bundled_catalog_dir())


def rules_reading(*exprs: str) -> RuleSet:
    rules = tuple(Rule(expr, record=f"test:r{i}") for i, expr in enumerate(exprs))
    return RuleSet((RuleFile("alerts/test.yaml", (RuleGroup("g", rules),)),))


def test_an_alias_counts_for_its_field_and_order_is_the_catalogs(catalog):
    rules = rules_reading('max by (gpu) (DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL)',
                          'DCGM_FI_DEV_GPU_TEMP > 90 and on (gpu) up', 'DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS')
    order = [m.name for m in catalog.metrics]
    assert fields_read(catalog, rules) == sorted(["DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_GPU_TEMP"],
                                                 key=order.index)


def test_series_outside_the_metric_catalog_are_not_fields(catalog):
    assert fields_read(catalog, rules_reading("gpu:some_record:ratio > 0", "up == 0")) == []


def test_counters_carry_type_help_label_fields_and_namespace(catalog):
    counters = exporter_counters(catalog, rules_reading("rate(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[5m]) > 0"), "gpu-monitoring")
    assert [(f.name, f.type) for f in counters.fields] == [("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter")]
    assert counters.fields[0].help == catalog.metric("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL").help
    assert [f.name for f in counters.label_fields] == list(catalog.named_all("label_fields"))
    assert counters.namespace == "gpu-monitoring"
