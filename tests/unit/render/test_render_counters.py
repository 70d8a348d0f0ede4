"""rulesgen/render/counters.py on a two-rule RuleSet written here: the CSV enables exactly the DCGM fields
those rules read (an alias counted as its field, in the catalog's order), the Helm and GPU Operator objects
carry that CSV, and parse_counters reads a counters file back."""
import pytest
import yaml

from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.model.output import Rule, RuleFile, RuleGroup, RuleSet
from rulesgen.render.counters import (
    CSV_PATH, GPU_OPERATOR_CONFIGMAP, GPU_OPERATOR_KEY, GPU_OPERATOR_MOUNT, GPU_OPERATOR_NAMESPACE, counters_csv,
    fields_read, parse_counters, render_counters)

RULES = RuleSet((RuleFile("alerts/prometheus/x.yaml", (RuleGroup("g", (
    # an alias of DCGM_FI_DEV_CLOCKS_EVENT_REASONS, a record (not a field) and an unknown series
    Rule("max by (gpu) (DCGM_FI_DEV_CLOCK_THROTTLE_REASONS) > on (gpu) gpu:x:y", record="gpu:a:b"),
    Rule("rate(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[5m]) > 0 unless some_other_series", alert="A", for_seconds=60),
)),)),))


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(bundled_catalog_dir())


def test_fields_read_are_canonical_and_in_catalog_order(catalog):
    assert fields_read(catalog, RULES) == ["DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"]


def test_the_csv_enables_those_fields_and_the_label_fields(catalog):
    csv = counters_csv(catalog, RULES)
    assert parse_counters(csv) == {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
                                   *catalog.named_all("label_fields")}
    ecc = catalog.metric("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")
    assert f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, {ecc.type}, {ecc.help}" in csv.splitlines()


def test_every_delivery_carries_the_same_csv(catalog):
    arts = {a.path: a.text for a in render_counters(catalog, RULES, "monitoring")}
    csv = arts[CSV_PATH]
    assert yaml.safe_load(arts["exporter/dcgm-exporter-values.yaml"]) == {"customMetrics": csv}
    chart = yaml.safe_load(arts["exporter/dcgm-exporter-metrics-configmap.yaml"])
    assert (chart["metadata"]["namespace"], chart["data"]) == ("monitoring", {"metrics": csv})
    operator = yaml.safe_load(arts["exporter/gpu-operator-dcgm-metrics-configmap.yaml"])
    assert operator["metadata"] == {"name": GPU_OPERATOR_CONFIGMAP, "namespace": GPU_OPERATOR_NAMESPACE,
                                    "labels": {"app.kubernetes.io/managed-by": "rulesgen"}}
    assert operator["data"] == {GPU_OPERATOR_KEY: csv}
    patch = yaml.safe_load(arts["exporter/gpu-operator-clusterpolicy-patch.yaml"])
    assert patch["spec"]["dcgmExporter"] == {"config": {"name": GPU_OPERATOR_CONFIGMAP},
                                             "env": [{"name": "DCGM_EXPORTER_COLLECTORS", "value": GPU_OPERATOR_MOUNT}]}


def test_parse_counters_skips_comments_and_blank_lines():
    text = "# a comment\n\n  DCGM_FI_DEV_GPU_TEMP, gauge, temperature\n#DCGM_FI_DEV_POWER_USAGE, gauge, off\nDCGM_FI_DEV_XID_ERRORS,gauge,x\n"
    assert parse_counters(text) == {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS"}
