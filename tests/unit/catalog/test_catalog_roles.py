"""rulesgen/catalog/roles.py: `roles:` of signals.yaml and metrics.yaml, each role resolved to its names, and
the record names rulesgen writes itself."""
import pytest

from rulesgen.catalog.roles import generated, read_roles, resolve_roles
from rulesgen.errors import Collector, Where
from rulesgen.model import conventions
from rulesgen.model.roles import METRIC, RECORD, ROLES
from unit_yaml import printed, written

DEFINED = {"gpu:my_reporting:ts", "gpu:a:ratio", "gpu:b:ratio"}
SIGNALS = """\
roles:
  reporting: gpu:my_reporting:ts
  job_gpu_panels: [gpu:a:ratio, gpu:b:ratio]
signals: []
"""


def test_declared_names_by_role_and_where_a_default_belongs(tmp_path):
    _, doc = written(tmp_path, "signals.yaml", SIGNALS)
    errors = Collector()
    declared, where = read_roles(doc, errors, RECORD, DEFINED)
    assert declared == {"reporting": ("gpu:my_reporting:ts",), "job_gpu_panels": ("gpu:a:ratio", "gpu:b:ratio")}
    assert (where.line, where.col) == (4, 1)  # the signals: key
    assert errors.items == []


def test_a_metric_role_is_not_read_from_signals(tmp_path):
    _, doc = written(tmp_path, "signals.yaml", "roles:\n  xid_gauge: DCGM_FI_DEV_XID_ERRORS\nsignals: []\n")
    errors = Collector()
    declared, _ = read_roles(doc, errors, RECORD, DEFINED)
    assert declared == {}
    assert [d.code for d in errors.items] == ["unknown-key"]  # xid_gauge is a role of metrics.yaml


def test_an_undefined_name_a_number_and_a_misspelt_role_are_errors_at_their_lines(tmp_path):
    text = SIGNALS.replace("gpu:my_reporting:ts", "gpu:my_reportin:ts").replace("gpu:b:ratio]", "3]\n  reportin: x")
    path, doc = written(tmp_path, "signals.yaml", text)
    errors = Collector()
    declared, _ = read_roles(doc, errors, RECORD, DEFINED)
    assert declared == {"reporting": (), "job_gpu_panels": ("gpu:a:ratio",)}
    assert printed(errors) == [
        f"{path}:2:3: error[unknown-signal]: signals.yaml roles.reporting ({ROLES['reporting'].about}): no signal "
        "'gpu:my_reportin:ts' in signals.yaml (did you mean 'gpu:my_reporting:ts'?)",
        f"{path}:3:33: error[bad-type]: signals.yaml roles.job_gpu_panels: a signal name must be a string, got 3",
        f"{path}:4:3: error[unknown-key]: signals.yaml roles: unknown key 'reportin' (did you mean 'reporting'?)",
    ]


def test_resolve_keeps_declared_names_and_defaults_the_catalog_defines():
    errors = Collector()
    defined = {METRIC: {"DCGM_FI_DEV_GPU_TEMP"}, RECORD: {"gpu:x:y", "gpu:dcgm_workload:info", "gpu:dcgm_gpu_util:ratio"}}
    roles = dict(resolve_roles({"reporting": ("gpu:x:y",)}, defined, {METRIC: Where("m.yaml", 2), RECORD: Where("s.yaml", 3)},
                               {}, errors))
    assert list(roles) == list(ROLES)
    assert roles["reporting"] == ("gpu:x:y",)
    assert roles["workload"] == ("gpu:dcgm_workload:info",)
    assert roles["job_gpu_panels"] == ("gpu:dcgm_gpu_util:ratio",)  # the defaults the catalog defines, no others
    assert roles["plot_context"] == ("DCGM_FI_DEV_GPU_TEMP",) and roles["fleet_gpus"] == ()
    assert errors.items == []


def test_a_needed_role_without_its_default_is_an_error_where_it_should_be_defined():
    errors = Collector()
    defined = {METRIC: {"DCGM_FI_DEV_GPU_TEMP"}, RECORD: {"gpu:dcgm_reporting:timestamp", "gpu:dcgm_workload:info"}}
    resolve_roles({}, defined, {METRIC: Where("m.yaml", 2), RECORD: Where("s.yaml", 3)}, {"fleet_gpus": "panel X"}, errors)
    assert printed(errors) == [
        f"s.yaml:3:1: error[missing-name]: signals.yaml: panel X reads the signal of role 'fleet_gpus' "
        f"({ROLES['fleet_gpus'].about}): no signal 'fleet:dcgm_gpus:count' in signals.yaml; define it, or name another "
        "under `roles:` (fleet_gpus: NAME)"]


@pytest.mark.parametrize("record, expected", [
    (conventions.MODEL_GPUS, True), (sorted(conventions.BASELINE_RECORDS)[0], True),
    (conventions.LIMIT_PREFIX + "x", True), (conventions.GPU_LIMIT_PREFIX + "x", True),
    ("gpu:dcgm_gpu_temp:max", False), ("model:dcgm_gpus:sum", False)])
def test_generated_names(record, expected):
    assert generated(record) is expected
