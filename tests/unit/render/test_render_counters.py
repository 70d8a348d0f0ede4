"""The counters model as the exporter's CSV, the chart's values and ConfigMap, and the GPU Operator's objects."""
import yaml

from rulesgen.load.counters import parse_counters
from rulesgen.model.output import CounterField, ExporterCounters
from rulesgen.render.counters import CSV_PATH, GPU_OPERATOR_KEY, counters_csv, render_counters

COUNTERS = ExporterCounters((CounterField("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
                             CounterField("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Volatile DBEs.")),
                            (CounterField("DCGM_FI_DRIVER_VERSION", "label", "Driver Version"),), "telemetry")


def test_the_csv_enables_exactly_the_fields_and_label_fields():
    assert parse_counters(counters_csv(COUNTERS)) == {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
                                                      "DCGM_FI_DRIVER_VERSION"}
    assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Volatile DBEs." in counters_csv(COUNTERS).splitlines()


def test_every_object_carries_the_same_csv_and_the_chart_configmap_its_namespace():
    files = {a.path: a.text for a in render_counters(COUNTERS)}
    csv = files[CSV_PATH]
    assert yaml.safe_load(files["exporter/dcgm-exporter-values.yaml"])["customMetrics"] == csv
    chart = yaml.safe_load(files["exporter/dcgm-exporter-metrics-configmap.yaml"])
    assert (chart["metadata"]["namespace"], chart["data"]["metrics"]) == ("telemetry", csv)
    operator = yaml.safe_load(files["exporter/gpu-operator-dcgm-metrics-configmap.yaml"])
    assert operator["data"][GPU_OPERATOR_KEY] == csv
    patch = yaml.safe_load(files["exporter/gpu-operator-clusterpolicy-patch.yaml"])
    assert patch["spec"]["dcgmExporter"]["config"]["name"] == operator["metadata"]["name"]
