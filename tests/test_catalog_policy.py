"""Policy tables that lived in Python are catalog data with a source, validated at load (issue 24, item 3):
xid.yaml `drain:` (which XID classes take the GPU out of service, [[ xid.drain ]]) and the clock-event bit
table (metrics.yaml `bits:` of the clock gauge, read by the replay dialects). Planted bad cases fail at
their file:line; the bundled catalog declares both and loads clean. No engine binary is needed."""
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import ROOT, edit, errors_of
from treeasserts import offsets
from rulesgen.load import dialects
from rulesgen.builders import templates
from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.errors import RulesgenError
from rulesgen.model.catalog import XID_CLASSES, XID_DRAIN_UNDECLARED
from rulesgen.promql import tree
from rulesgen.promql.text import series_labels
from rulesgen.load.scenarios import load_scenario
from rulesgen.load.settings import load_settings

BUNDLED = load_catalog(bundled_catalog_dir())
CLOCK = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"


def copy(tmp_path) -> Path:
    d = tmp_path / "catalog"
    shutil.copytree(bundled_catalog_dir(), d)
    return d


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# --- XID drain policy ----------------------------------------------------------------------------------------

def test_bundled_catalog_declares_the_drain_classes_with_a_source():
    from rulesgen.load.yamlsource import load_file
    doc = load_file(bundled_catalog_dir() / "xid.yaml", "xid.yaml", collect=[])
    assert list(doc["drain"]["classes"]) and doc["drain"]["source"].strip()
    assert BUNDLED.xid_drain == ("reset", "reboot", "rma")


def test_the_template_context_drains_the_declared_classes(tmp_path):
    """[[ xid.drain ]] is the codes of the catalog's drain classes: dropping rma from drain: drops XID 54."""
    settings = load_settings(ROOT / "rulesgen.yaml")
    drain = templates.base_context(BUNDLED, settings)["xid"]["drain"].split("|")
    assert drain == [str(x.code) for c in ("reset", "reboot", "rma") for x in BUNDLED.xids if x.xid_class == c]
    assert "54" in drain and "79" in drain and "13" not in drain
    d = copy(tmp_path)
    edit(d / "xid.yaml", "classes: [reset, reboot, rma]", "classes: [reset, reboot]")
    narrower = load_catalog(d)
    assert narrower.xid_drain == ("reset", "reboot")
    assert "54" not in templates.base_context(narrower, settings)["xid"]["drain"].split("|")


def test_an_unknown_or_repeated_drain_class_fails_on_its_line(tmp_path):
    d = copy(tmp_path)
    x = d / "xid.yaml"
    edit(x, "classes: [reset, reboot, rma]", "classes:\n    - reset\n    - rebot\n    - reset")
    line = line_of(x, "- rebot")
    assert errors_of(load_catalog, d) == [
        f"{x}:{line}:7: error[unknown-xid-class]: xid.yaml drain.classes: 'rebot' is not an XID class (one of "
        f"{', '.join(XID_CLASSES)}) (did you mean 'reboot'?)",
        f"{x}:{line + 1}:7: error[duplicate-id]: xid.yaml drain.classes: 'reset' already listed on line {line - 1}",
    ]


def test_a_drain_policy_needs_its_source(tmp_path):
    d = copy(tmp_path)
    x = d / "xid.yaml"
    text = x.read_text()
    start = text.index("  source: >-\n    nvsentinel-xiderrorsmapping.csv resolution buckets")
    end = text.index("\nxids:")
    x.write_text(text[:start] + text[end:])
    assert errors_of(load_catalog, d) == [
        f"{x}:{line_of(x, 'classes: [reset')}:3: error[missing-key]: xid.yaml drain: missing required key 'source'",
    ]


def test_a_catalog_without_drain_keeps_the_classes_that_drained_before(minimal_catalog):
    assert "drain" not in (minimal_catalog / "xid.yaml").read_text()
    assert load_catalog(minimal_catalog).xid_drain == XID_DRAIN_UNDECLARED


APPLICATION_XIDS = {13, 31, 43, 45, 68, 109}  # the device plugin's ignore list (xid.yaml, class rule 1)


def derived_xid_class(x) -> str:
    """xid.yaml's six class rules (its header), first match wins, from what each entry records: its code, its
    DCGM health verdict and the NVSentinel bucket its source quotes ("nvsentinel BUCKET (FATAL|NONFATAL)")."""
    import re
    found = re.search(r"nvsentinel (\w+) \((?:NON)?FATAL\)", x.source)
    bucket = found.group(1) if found else ""
    if x.code in APPLICATION_XIDS:
        return "application"
    if bucket == "CHECK_MECHANICALS":
        return "rma"
    if bucket in ("RESTART_BM", "RESTART_VM") or x.code == 79:
        return "reboot"
    if bucket in ("RESET_GPU", "WORKFLOW_NVLINK_ERR", "WORKFLOW_NVLINK5_ERR") or x.dcgm_health == "fail":
        return "reset"
    if bucket == "RESTART_APP":
        return "application"
    return "investigate"


def test_every_xids_class_follows_from_its_sources_by_the_catalogs_rules():
    """A class is derived, not chosen: an XID DCGM's health watches mark FAIL (48, double-bit ECC) or NVSentinel
    resets is in a drain class, so the critical XID alert drains for it. Classed by hand instead, XID 48 as
    investigate passed every other test (the DBE scenarios' ECC alert covers the XID alert)."""
    assert {x.code: derived_xid_class(x) for x in BUNDLED.xids} == {x.code: x.xid_class for x in BUNDLED.xids}
    drained = {x.code for x in BUNDLED.xids if x.xid_class in BUNDLED.xid_drain}
    assert {48, 79, 54} <= drained and not drained & APPLICATION_XIDS
    assert {x.code for x in BUNDLED.xids if x.dcgm_health == "fail"} - APPLICATION_XIDS <= drained


# --- clock-event bits ----------------------------------------------------------------------------------------

def test_bundled_clock_gauge_declares_its_bits_with_a_source():
    m = BUNDLED.metric(BUNDLED.named("clock_gauge"))
    assert m.name == CLOCK and m.bits_source.strip()
    assert [b.value for b in m.bits] == [1 << k for k in range(9)]
    assert all(b.define.startswith("DCGM_CLOCKS_EVENT_REASON_") for b in m.bits)
    assert [b.name for b in m.bits] == ["gpu_idle", "clocks_setting", "power_cap", "hw_slowdown", "sync_boost",
                                        "sw_thermal", "hw_thermal", "hw_power_brake", "display_clocks"]


def bad_bits(tmp_path, old, new):
    d = copy(tmp_path)
    p = d / "metrics.yaml"
    edit(p, old, new)
    return d, p


def test_a_bit_that_is_not_a_power_of_two_fails_on_its_line(tmp_path):
    d, p = bad_bits(tmp_path, "{value: 16, name: sync_boost", "{value: 24, name: sync_boost")
    assert errors_of(load_catalog, d) == [
        f"{p}:{line_of(p, 'value: 24,')}:12: error[bad-bit]: metric {CLOCK} bit sync_boost: value 24 is not a power of two",
    ]


def test_a_bit_value_or_name_given_twice_fails_on_the_second(tmp_path):
    # the idle bit, which no signal reads by name, turned into the next (renaming a bit a signal reads is also
    # that signal's error: see below)
    d, p = bad_bits(tmp_path, "{value: 1, name: gpu_idle", "{value: 2, name: clocks_setting")
    first, second = line_of(p, "value: 2,"), line_of(p, "value: 2,") + 1
    assert errors_of(load_catalog, d) == [
        f"{p}:{second}:12: error[duplicate-id]: metric {CLOCK}: bit value 2 already defined on line {first}",
        f"{p}:{second}:22: error[duplicate-id]: metric {CLOCK}: bit name 'clocks_setting' already defined on line {first}",
    ]


def test_only_a_bitmask_has_bits(tmp_path):
    d, p = bad_bits(tmp_path, "    unit: bitmask\n", "    unit: count\n")
    assert errors_of(load_catalog, d) == [
        f"{p}:{line_of(p, '    bits:')}:5: error[bad-value]: metric {CLOCK}: only a metric of unit bitmask has bits, "
        "its unit is 'count'",
    ]


def _clock_events(catalog, stem="power-anomaly-hw-brake"):
    s = load_scenario(ROOT / "fixtures" / "scenarios" / f"{stem}.yaml", [fm.id for fm in catalog.failure_modes],
                      {n for m in catalog.metrics for n in m.names})
    t = dialects.apply(s, dialects.parse_dialect("clock-total"), catalog)
    return {series_labels(x)["clock_event"] for x, _ in t.series if x.startswith("DCGM_EXP_CLOCK_EVENTS_TOTAL{")}


def test_the_clock_dialects_name_bits_as_the_catalog_does(tmp_path):
    assert "hw_power_brake" in _clock_events(BUNDLED)
    d, _ = bad_bits(tmp_path, "name: hw_power_brake,", "name: power_brake_renamed,")
    sig = d / "signals.yaml"  # the signals that read the bit are renamed with it
    edit(sig, "hw_power_brake", "power_brake_renamed", sig.read_text().count("hw_power_brake"))
    events = _clock_events(load_catalog(d))
    assert "power_brake_renamed" in events and "hw_power_brake" not in events


def test_a_clock_gauge_without_bits_cannot_be_replayed_as_events():
    m = BUNDLED.metric(CLOCK)
    bare = replace(BUNDLED, metrics=tuple(replace(x, bits=()) if x is m else x for x in BUNDLED.metrics))
    with pytest.raises(RulesgenError) as info:
        _clock_events(bare)
    assert [d.code for d in info.value.diagnostics] == ["missing-bits"]
    assert info.value.diagnostics[0].line == m.where.line


# --- for: values with their source ------------------------------------------------------------------------

def test_every_bundled_for_has_a_source():
    alerts = [(fm.id, a) for fm in BUNDLED.failure_modes for a in fm.alerts]
    assert alerts and all(a.for_source.strip() for _, a in alerts), [i for i, a in alerts if not a.for_source.strip()]


def test_a_bundled_for_without_its_source_fails_on_its_line(tmp_path):
    d = copy(tmp_path)
    f = d / "failure_modes.yaml"
    text = f.read_text()
    start = text.index("        for_source: >-\n", text.index("  - id: memory_overheat"))
    end = text.index("        expr:", start)
    f.write_text(text[:start] + text[end:])
    line = next(i for i, s in enumerate(f.read_text().splitlines(), 1)
                if s == "        for: 2m" and i > line_of(f, "- id: memory_overheat"))
    first = line_of(f, "        for_source:")
    assert errors_of(load_catalog, d) == [
        f"{f}:{line}:9: error[missing-source]: failure mode memory_overheat (warning): `for:` has no for_source "
        f"(why this duration); this file sources its for: values (line {first}), so every alert's needs one",
    ]


def test_a_catalog_that_sources_no_for_still_loads(minimal_catalog):
    assert "for_source" not in (minimal_catalog / "failure_modes.yaml").read_text()
    assert [a.for_source for fm in load_catalog(minimal_catalog).failure_modes for a in fm.alerts] == [""]


# --- windows: the ranges the alerts read, named and sourced -------------------------------------------------

# Failure modes whose alerts still spell a range literally: none. A new literal range is a window to declare
# (telemetry_blind_spot reads its hour as [[ t.lookback | window ]]: a threshold, listed in its runbook).
LITERAL_RANGES: set[str] = set()


def test_bundled_windows_have_sources_and_the_rest_is_known():
    import re
    windows = [(fm.id, w) for fm in BUNDLED.failure_modes for w in fm.windows]
    assert len(windows) >= 15 and all(w.source.strip() and w.seconds > 0 for _, w in windows)
    literal = {fm.id for fm in BUNDLED.failure_modes for a in fm.alerts
               if re.search(r"(?<!\[)\[\d+[smhdw]\]", a.expr)}
    assert literal == LITERAL_RANGES


def alert_exprs(catalog, failure_mode: str) -> list[str]:
    """The expressions of a failure mode's alerts, built with the repository's config."""
    from rulesgen.builders.rules import build_rules
    rules = build_rules(catalog, load_settings(ROOT / "rulesgen.yaml"))
    return [r.expr for r in rules.rules if r.failure_mode == failure_mode and r.alert]


def test_windows_render_as_the_ranges_they_name(tmp_path):
    """[[ w.median ]] is the declared value as a range: lengthening the window lengthens every range it names."""
    def exprs(catalog):
        return alert_exprs(catalog, "memory_bandwidth_bound")

    assert exprs(BUNDLED) and all(e.count("[15m]") == 2 for e in exprs(BUNDLED))
    d = copy(tmp_path)
    f = d / "failure_modes.yaml"
    text = f.read_text()
    at = text.index("        value: 15m", text.index("  - id: memory_bandwidth_bound"))
    f.write_text(text[:at] + "        value: 20m" + text[at + len("        value: 15m"):])
    longer = exprs(load_catalog(d))
    assert longer and all(e.count("[20m]") == 2 and "[15m]" not in e for e in longer)


def test_telemetry_blind_spot_reads_its_lookback(tmp_path):
    """The hour of fields a GPU reported is the `lookback` threshold: changing it changes the rule."""
    def exprs(catalog):
        return alert_exprs(catalog, "telemetry_blind_spot")

    assert exprs(BUNDLED) and all("gpu:dcgm_fields:count[1h]" in e for e in exprs(BUNDLED))
    d = copy(tmp_path)
    f = d / "failure_modes.yaml"
    text = f.read_text()
    at = text.index("        value: 3600", text.index("  - id: telemetry_blind_spot"))
    f.write_text(text[:at] + "        value: 7200" + text[at + len("        value: 3600"):])
    longer = exprs(load_catalog(d))
    assert longer and all("gpu:dcgm_fields:count[2h]" in e and "[1h]" not in e for e in longer)


def test_a_window_no_alert_reads_or_without_source_fails_on_its_line(tmp_path):
    d = copy(tmp_path)
    f = d / "failure_modes.yaml"
    text = f.read_text()
    start = text.index("    windows:\n", text.index("  - id: memory_overheat"))
    f.write_text(text[:start] + "    windows:\n      - name: spare\n        value: 1h\n" + text[start + len("    windows:\n"):])
    line = line_of(f, "- name: spare")
    assert errors_of(load_catalog, d) == [
        f"{f}:{line}:9: error[missing-key]: failure mode memory_overheat window: missing required key 'source'",
        f"{f}:{line}:9: error[unused-window]: failure mode memory_overheat: window 'spare' is read by no alert",
    ]


# signals.yaml `windows:`: every range, offset and counter-macro window of a recording rule is named and sourced

def test_bundled_signal_windows_have_sources_and_no_signal_spells_a_range():
    import re
    assert len(BUNDLED.signal_windows) >= 8 and all(w.source.strip() and w.seconds > 0 for w in BUNDLED.signal_windows)
    literal = [s.record for s in BUNDLED.signals
               if re.search(r"(?<!\[)\[\d+[smhdw]\]|offset \d|[\"']\d+[smhdw][\"']|samples\(\d", s.expr)]
    assert literal == []


def _signal_exprs(catalog, record: str) -> list[str]:
    from rulesgen.builders.rules import build_rules
    rules = build_rules(catalog, load_settings(ROOT / "rulesgen.yaml"))
    return [r.expr for f in rules.files for g in f.groups for r in g.rules if r.record == record]


def test_a_signal_window_renders_as_its_range_offset_and_macro_window(tmp_path):
    """xid_recent is the [10m] range, the offset 10m and the increase()/born() window of gpu:dcgm_xid:recent:
    lengthening it lengthens all of them."""
    [expr] = _signal_exprs(BUNDLED, "gpu:dcgm_xid:recent")
    assert tree.windows(expr).count(600) >= 4 and offsets(expr).count(600) >= 2
    d = copy(tmp_path)
    edit(d / "signals.yaml", "  - name: xid_recent\n    value: 10m\n", "  - name: xid_recent\n    value: 20m\n")
    [longer] = _signal_exprs(load_catalog(d), "gpu:dcgm_xid:recent")
    assert tree.windows(longer).count(1200) == tree.windows(expr).count(600)
    assert offsets(longer).count(1200) == offsets(expr).count(600)
    assert 600 not in tree.windows(longer) + tuple(offsets(longer))


def test_an_unknown_or_unread_signal_window_fails_on_its_line(tmp_path):
    d = copy(tmp_path)
    f = d / "signals.yaml"
    edit(f, "gpu:dcgm_xid_last:code[[ w.xid_recent ]]", "gpu:dcgm_xid_last:code[[ w.xid_recnt ]]")
    edit(f, "windows:\n", "windows:\n  - name: spare\n    value: 1h\n    source: read by nothing\n")
    bad, spare = line_of(f, "w.xid_recnt"), line_of(f, "- name: spare")
    col = next(line for line in f.read_text().splitlines() if "w.xid_recnt" in line).index("w.xid_recnt") + 1
    names = ", ".join(["spare"] + [w.name for w in BUNDLED.signal_windows])
    assert errors_of(load_catalog, d) == [
        f"{f}:{spare}:5: error[unused-window]: signals.yaml: window 'spare' is read by no signal",
        f"{f}:{bad}:{col}: error[unknown-window]: signal gpu:dcgm_xid:recent: unknown window 'xid_recnt' "
        f"(did you mean 'xid_recent'?) (signals.yaml windows: {names})",
    ]


def test_a_catalog_without_signal_windows_still_loads(minimal_catalog):
    """Literal macro windows ("5m") stay valid: a catalog written before `windows:` existed loads as it did."""
    assert "windows:" not in (minimal_catalog / "signals.yaml").read_text()
    assert load_catalog(minimal_catalog).signal_windows == ()


def test_signals_test_clock_bits_by_name(tmp_path):
    """signals.yaml tests a bit as floor(x / [[ bit.METRIC.NAME ]]) % 2: the value comes from the catalog's table,
    and a bit renamed in metrics.yaml fails the signal that reads it at load, on the line that names it."""
    thermal = next(s for s in BUNDLED.signals if s.record == "gpu:dcgm_clock_event_thermal:active")
    assert f"[[ bit.{CLOCK}.hw_thermal ]]" in thermal.expr and "/ 64" not in thermal.expr
    d, p = bad_bits(tmp_path, "name: hw_thermal,", "name: hw_thermal_slowdown,")
    with pytest.raises(RulesgenError) as info:
        load_catalog(d)
    diags = [x for x in info.value.diagnostics if "hw_thermal" in x.message]
    assert sorted(x.message.split(":", 1)[1].split(":")[0] for x in diags) == [
        "dcgm_clock_event_thermal", "dcgm_sm_clock_unconstrained"]  # each signal that reads the bit
    [diag] = [x for x in diags if "gpu:dcgm_clock_event_thermal:active" in x.message]
    sig = d / "signals.yaml"
    assert diag.path == str(sig) and diag.code == "unknown-bit"
    assert diag.line == line_of(sig, f"bit.{CLOCK}.hw_thermal")
    assert diag.message.startswith(f"signal gpu:dcgm_clock_event_thermal:active: 'hw_thermal' is not a bit of {CLOCK}")
    assert "hw_thermal_slowdown" in diag.message  # the table's names


def test_clock_event_matchers_come_from_the_bit_table(tmp_path):
    """bit_matcher("METRIC", "NAME", ...) is the label matcher of the bits' names, in the label `bits:` declares
    (clock_event): no hand-written clock_event="..." in signals.yaml; renaming the label renames every matcher."""
    from rulesgen.builders.rules import build_rules
    settings = load_settings(ROOT / "rulesgen.yaml")
    assert "clock_event=" not in (bundled_catalog_dir() / "signals.yaml").read_text().split("\nsignals:\n")[1]

    def brake(catalog) -> str:
        rules = build_rules(catalog, settings)
        [expr] = [r.expr for f in rules.files for g in f.groups for r in g.rules
                  if r.record == "gpu:dcgm_clock_event_power_brake:active"]
        return expr

    assert brake(BUNDLED).count('clock_event="hw_power_brake"') == 6
    d, _ = bad_bits(tmp_path, "      label: clock_event\n", "      label: reason\n")
    assert brake(load_catalog(d)).count('reason="hw_power_brake"') == 6


def test_a_misspelt_bit_in_a_matcher_is_a_load_error_on_its_line(tmp_path):
    d = copy(tmp_path)
    sig = d / "signals.yaml"
    edit(sig, f'bit_matcher("{CLOCK}", "hw_power_brake")', f'bit_matcher("{CLOCK}", "hw_power_break")')
    line = line_of(sig, '"hw_power_break"')
    col = next(x for x in sig.read_text().splitlines() if '"hw_power_break"' in x).index("hw_power_break") + 1
    assert errors_of(load_catalog, d) == [
        f"{sig}:{line}:{col}: error[unknown-bit]: signal gpu:dcgm_clock_event_power_brake:active: 'hw_power_break' "
        f"is not a bit of {CLOCK} (did you mean 'hw_power_brake'?) (metrics.yaml bits: "
        + ", ".join(b.name for b in BUNDLED.metric(CLOCK).bits) + ")",
    ]


def test_a_matcher_needs_the_bits_label(tmp_path):
    d, p = bad_bits(tmp_path, "      label: clock_event\n", "")
    errors = errors_of(load_catalog, d)
    assert errors and all("error[unknown-bit]" in e and "bits: label" in e for e in errors)


# --- dead fields: loaded and never read, now unknown keys (grafana_unit was the last one still accepted) -------

@pytest.mark.parametrize("file, after, key", [("metrics.yaml", "    unit: C\n", "grafana_unit"),
                                              ("metrics.yaml", "    unit: C\n", "exporter_1x_name"),
                                              ("xid.yaml", "    class: reboot\n", "mnemonic"),
                                              ("xid.yaml", "    class: reboot\n", "nvidia_action")])
def test_a_dead_catalog_field_is_an_unknown_key(minimal_catalog, file, after, key):
    p = minimal_catalog / file
    edit(p, after, f"{after}    {key}: x\n")
    [error] = errors_of(load_catalog, minimal_catalog)
    assert error.startswith(f"{p}:{line_of(p, key + ':')}:5: error[unknown-key]: ") and repr(key) in error
