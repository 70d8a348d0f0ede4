"""rulesgen/catalog/metrics.py: metrics.yaml (aliases and their scales), signals.yaml (record names, the metrics
an expression names), xid.yaml and gpu_models.yaml (limits per model, own_limits)."""
from conftest import MINIMAL_CATALOG
from rulesgen.catalog.metrics import read_gpu_models, read_metrics, read_signals, read_xids
from rulesgen.errors import Collector
from unit_yaml import printed, written

METRICS = """\
metrics:
  - name: DCGM_FI_DEV_SM_CLOCK
    field_id: 100
    type: gauge
    unit: Hz
    help: SM clock
    profiling: false
    default_enabled: true
    aliases:
      - DCGM_FI_DEV_SM_CLOCK_OLD
      - {name: DCGM_FI_DEV_SM_CLOCK_MHZ, unit: MHz, scale: 1000000, since: "3.3", source: docs}
"""
OWN_LIMITS = """\
own_limits:
  - {key: gpu_max_operating_temp_c, metric: DCGM_FI_DEV_GPU_MAX_OP_TEMP, source: nvml}
"""


def test_a_metric_with_its_aliases_grouped_by_scale(tmp_path):
    _, doc = written(tmp_path, "metrics.yaml", METRICS)
    errors = Collector()
    (m,) = read_metrics(doc, errors)
    assert errors.items == []
    assert (m.name, m.field_id, m.type, m.unit, m.profiling, m.default_enabled) == ("DCGM_FI_DEV_SM_CLOCK", 100, "gauge", "Hz",
                                                                                     False, True)
    assert m.names == ("DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_SM_CLOCK_OLD", "DCGM_FI_DEV_SM_CLOCK_MHZ")
    assert [(a.name, a.unit, a.scale, a.since) for a in m.aliases] == [
        ("DCGM_FI_DEV_SM_CLOCK_OLD", "Hz", 1.0, ""), ("DCGM_FI_DEV_SM_CLOCK_MHZ", "MHz", 1e6, "3.3")]
    assert m.names_by_scale() == [(1.0, ("DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_SM_CLOCK_OLD")),
                                  (1e6, ("DCGM_FI_DEV_SM_CLOCK_MHZ",))]


def test_a_bad_type_and_an_alias_in_another_unit_without_scale(tmp_path):
    path, doc = written(tmp_path, "metrics.yaml", METRICS.replace("scale: 1000000, ", "").replace("type: gauge", "type: gage"))
    errors = Collector()
    read_metrics(doc, errors)
    assert printed(errors) == [
        f"{path}:4:5: error[bad-value]: metric.type must be one of counter, gauge, label, got 'gage' (did you mean 'gauge'?)",
        f"{path}:11:9: error[alias-scale-missing]: alias DCGM_FI_DEV_SM_CLOCK_MHZ is in 'MHz', the metric in 'Hz': "
        "give `scale` (factor to Hz)",
    ]


def test_an_alias_that_repeats_another_metric_name(tmp_path):
    path, doc = written(tmp_path, "metrics.yaml", METRICS.replace("- DCGM_FI_DEV_SM_CLOCK_OLD", "- DCGM_FI_DEV_SM_CLOCK"))
    errors = Collector()
    read_metrics(doc, errors)
    assert printed(errors) == [f"{path}:2:5: error[duplicate-id]: metric name 'DCGM_FI_DEV_SM_CLOCK' already defined on line 2"]


def test_signals_with_the_metrics_their_expressions_name(tmp_path):
    _, doc = written(tmp_path, "signals.yaml", MINIMAL_CATALOG["signals.yaml"])
    errors = Collector()
    signals = read_signals(doc, errors, {"DCGM_FI_DEV_GPU_TEMP"})
    assert errors.items == []
    assert [(s.record, s.metrics, s.unit, s.where.line) for s in signals] == [
        ("gpu:dcgm_reporting:timestamp", ("DCGM_FI_DEV_GPU_TEMP",), "dateTimeAsIso", 5),
        ("gpu:dcgm_workload:info", ("DCGM_FI_DEV_GPU_TEMP",), "none", 9),
        ("gpu:dcgm_gpu_temp:max", ("DCGM_FI_DEV_GPU_TEMP",), "celsius", 13)]


def test_a_reserved_and_a_malformed_record_name_are_errors_at_their_lines(tmp_path):
    extra = ("  - {record: model:dcgm_gpus:count, unit: none, description: x, expr: 'count([[ m.DCGM_FI_DEV_GPU_TEMP ]])'}\n"
             "  - {record: gpu_temp_max, unit: none, description: x, expr: '[[ m.DCGM_FI_DEV_GPU_TEMP ]]'}\n")
    path, doc = written(tmp_path, "signals.yaml", MINIMAL_CATALOG["signals.yaml"] + extra)
    errors = Collector()
    read_signals(doc, errors, {"DCGM_FI_DEV_GPU_TEMP"})
    assert printed(errors) == [
        f"{path}:14:6: error[reserved-name]: signal model:dcgm_gpus:count: rulesgen writes this record itself "
        "(rulesgen/model/conventions.py); choose another name",
        f"{path}:15:6: error[bad-name]: recording rule name 'gpu_temp_max' must follow level:metric:operations with "
        "level one of gpu, node, job, fleet, model, rank",
    ]


def test_xids_and_a_repeated_code_with_a_bad_class(tmp_path):
    path, doc = written(tmp_path, "xid.yaml", MINIMAL_CATALOG["xid.yaml"] + "  - {code: 79, name: dup, class: rset, source: s}\n")
    errors = Collector()
    xids = read_xids(doc, errors)
    assert [(x.code, x.xid_class, x.dcgm_health) for x in xids] == [(79, "reboot", "fail"), (79, "investigate", "none")]
    assert printed(errors) == [
        f"{path}:7:6: error[duplicate-id]: XID 79 already defined on line 2",
        f"{path}:7:27: error[bad-value]: xid.class must be one of application, investigate, reboot, reset, rma, got 'rset' "
        "(did you mean 'reset'?)",
    ]


def test_gpu_models_take_the_default_limits_and_own_limits(tmp_path):
    _, doc = written(tmp_path, "gpu_models.yaml", MINIMAL_CATALOG["gpu_models.yaml"] + OWN_LIMITS)
    errors = Collector()
    default, models, own = read_gpu_models(doc, errors, {"DCGM_FI_DEV_GPU_MAX_OP_TEMP"})
    assert errors.items == []
    assert (default.id, default.match, default.limits) == ("default", None, (("gpu_max_operating_temp_c", 83.0),))
    assert [(m.id, m.match, m.limits) for m in models] == [("h100", ".*H100.*", (("gpu_max_operating_temp_c", 87.0),))]
    assert [(o.key, o.metric, o.fallback, o.where.line) for o in own] == [
        ("gpu_max_operating_temp_c", "DCGM_FI_DEV_GPU_MAX_OP_TEMP", "default", 12)]


def test_a_missing_limit_a_bad_regex_and_an_unknown_own_limit_metric(tmp_path):
    text = (MINIMAL_CATALOG["gpu_models.yaml"] + OWN_LIMITS).replace('match: ".*H100.*"', 'match: "(H100"').replace(
        "    gpu_max_operating_temp_c: 87\n", "").replace("MAX_OP_TEMP, source", "MAX_OP_TMP, source")
    path, doc = written(tmp_path, "gpu_models.yaml", text)
    errors = Collector()
    read_gpu_models(doc, errors, {"DCGM_FI_DEV_GPU_MAX_OP_TEMP"})
    assert printed(errors) == [
        f"{path}:6:5: error[missing-key]: gpu model: missing required key 'gpu_max_operating_temp_c'",
        f"{path}:8:5: error[bad-regex]: gpu model h100: match '(H100' is not a valid regex: missing ), unterminated "
        "subpattern at position 0",
        f"{path}:11:37: error[unknown-metric]: own limit gpu_max_operating_temp_c: unknown metric "
        "'DCGM_FI_DEV_GPU_MAX_OP_TMP' (did you mean 'DCGM_FI_DEV_GPU_MAX_OP_TEMP'?)",
    ]
