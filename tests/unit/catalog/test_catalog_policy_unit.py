"""rulesgen/catalog/policy.py on small files: xid.yaml `drain:` and a bitmask metric's `bits:` table
(tests/test_catalog_policy.py plants its errors in the bundled catalog; these read the loaders alone)."""
from rulesgen.catalog.policy import read_bits, read_xid_drain
from rulesgen.errors import Collector
from rulesgen.load.mapping import Fields
from rulesgen.model.catalog import XID_DRAIN_UNDECLARED
from unit_yaml import printed, written

BITS = """\
name: DCGM_X
bits:
  source: nvml.h
  label: clock_event
  values:
    - {value: 4, name: power, define: POWER}
    - {value: 1, name: idle, define: IDLE}
"""


def test_drain_classes_come_back_in_the_catalog_order_of_classes(tmp_path):
    _, doc = written(tmp_path, "xid.yaml", "xids: []\ndrain:\n  classes: [rma, reset]\n  source: test\n")
    errors = Collector()
    assert read_xid_drain(doc, errors) == ("reset", "rma")
    assert errors.items == []


def test_a_file_without_drain_keeps_the_undeclared_classes(tmp_path):
    _, doc = written(tmp_path, "xid.yaml", "xids: []\n")
    errors = Collector()
    assert read_xid_drain(doc, errors) == XID_DRAIN_UNDECLARED == ("reset", "reboot", "rma")
    assert errors.items == []


def test_drain_that_is_no_mapping_is_an_error_at_its_line(tmp_path):
    path, doc = written(tmp_path, "xid.yaml", "xids: []\ndrain: [reset]\n")
    errors = Collector()
    read_xid_drain(doc, errors)
    assert printed(errors)[0] == f"{path}:2:1: error[bad-type]: xid.yaml.drain must be a mapping, got NodeList"


def test_bits_are_sorted_by_value_with_their_source_and_label(tmp_path):
    _, doc = written(tmp_path, "metrics.yaml", BITS)
    errors = Collector()
    bits, source, label = read_bits(Fields(doc, errors, "metric"), "DCGM_X", "bitmask")
    assert [(b.value, b.name, b.define, b.where.line) for b in bits] == [(1, "idle", "IDLE", 7), (4, "power", "POWER", 6)]
    assert (source, label) == ("nvml.h", "clock_event")
    assert errors.items == []


def test_a_metric_without_bits_has_none(tmp_path):
    _, doc = written(tmp_path, "metrics.yaml", "name: DCGM_X\n")
    errors = Collector()
    assert read_bits(Fields(doc, errors, "metric"), "DCGM_X", "bitmask") == ((), "", "")
    assert errors.items == []


def test_a_bad_label_and_a_lower_case_define_are_errors_at_their_lines(tmp_path):
    text = BITS.replace("label: clock_event", "label: 9event").replace("define: IDLE", "define: idle")
    path, doc = written(tmp_path, "metrics.yaml", text)
    errors = Collector()
    bits, _, label = read_bits(Fields(doc, errors, "metric"), "DCGM_X", "bitmask")
    assert label == "" and [b.define for b in bits] == ["", "POWER"]
    assert printed(errors) == [
        f"{path}:4:3: error[bad-value]: metric DCGM_X bits.label: '9event' does not match [a-zA-Z_][a-zA-Z0-9_]*",
        f"{path}:7:30: error[bad-value]: metric DCGM_X bit.define: 'idle' does not match [A-Z][A-Z0-9_]*",
    ]
