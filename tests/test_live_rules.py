"""tests/live_rules.py: a replay of the live rules alone writes what a replay of every rule writes."""
import pytest
import yaml

import batches
import live_rules
import shard_equality as se
from rulesgen.durations import parse_duration
from rulesgen.promql.tree import parse


def returns(expr: str, names=(), alerts=()) -> bool:
    """alerts: the live alerts, each a name or (name, {fixed label: value})."""
    known = [{"alertname": a} if isinstance(a, str) else {"alertname": a[0], **a[1]} for a in alerts]
    return live_rules.returns(parse(expr), set(names), known)


def test_emptiness_flows_as_the_engines_define_it():
    assert returns("rate(a[5m])", {"a"}) and not returns("rate(a[5m])", {"b"})
    assert returns('{__name__=~"a|b", job="x"}', {"b"}) and not returns('{__name__=~"a|b"}', {"ab"})
    assert not returns('{__name__!~"a.*", job="x"}', {"ab"}) and returns('{job="x"}', {"zz"})
    assert returns("a or b", {"b"}) and not returns("a and b", {"b"}) and not returns("a unless b", {"b"})
    assert returns("a unless b", {"a"}) and not returns("a * on (x) group_left b", {"a"}) and returns("a > 3", {"a"})
    assert not returns("sum by (x) (a) / scalar(b)", {"b"}) and returns("sum by (x) (a) / scalar(b)", {"a"})
    assert returns("absent(a)") and returns("vector(1)") and returns('label_replace(vector(1), "x", "y", "", "")')
    assert returns("time() - a", {"a"}) and not returns("time() - a") and returns("count(a) or vector(0)")
    assert not returns('max_over_time((a - b)[1h:5m])', {"a"}) and returns("hour()")
    assert returns('ALERTS{alertname="X"}', alerts={"X"}) and not returns('ALERTS{alertname="Y"}', alerts={"X"})
    assert not returns('ALERTS{alertname=~"Y|Z"}', alerts={"X"}) and not returns("ALERTS", alerts=())
    down = ("Down", {"failure_mode": "exporter_down"})
    assert returns('ALERTS{failure_mode="exporter_down"}', alerts=[down]) and returns('ALERTS{severity="page"}', alerts=[down])
    assert returns('ALERTS_FOR_STATE{failure_mode=~"gpu_lost|xid"}', alerts=[down, "X"])  # X's failure_mode: any
    assert not returns('ALERTS_FOR_STATE{failure_mode=~"gpu_lost|xid"}', alerts=[down])


def test_records_and_alerts_come_alive_from_what_they_read_in_any_order():
    rules = [{"alert": "Fleet", "expr": 'count(ALERTS{failure_mode="hot"}) > 1', "labels": {"failure_mode": "fleet"}},
             {"alert": "Hot", "expr": "x:max > 90", "labels": {"failure_mode": "hot"}},
             {"record": "x:max", "expr": "max by (gpu) (temp)"},
             {"record": "y:max", "expr": "max by (gpu) (power)"},
             {"alert": "Absent", "expr": "absent(power)", "labels": {"failure_mode": "absent"}},
             {"alert": "Odd", "expr": "y:max > 2 or nonsense("}]
    assert live_rules.live(rules, {"temp"}) == [True, True, True, False, True, True]
    assert live_rules.live(rules, {"other"}) == [True, False, False, False, True, True]  # Odd: any failure_mode
    rules[-1]["labels"] = {"failure_mode": "odd"}
    assert live_rules.live(rules, {"other"}) == [False, False, False, False, True, True]


def test_pruned_copies_keep_the_live_rules_and_the_order_of_the_groups_left(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": [
        {"name": "a", "interval": "1m", "rules": [{"record": "x:max", "expr": "max(temp)"}, {"record": "y:max", "expr": "max(power)"}]},
        {"name": "b", "rules": [{"record": "z:max", "expr": "max(power)"}]},
        {"name": "c", "rules": [{"alert": "Hot", "expr": "x:max > 90", "for": "5m", "labels": {"severity": "page"}}]}]}))
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump({"groups": [{"name": "d", "rules": [{"record": "w:max", "expr": "max(power)"}]}]}))
    doc = {"rule_files": [str(rules), str(other)], "group_eval_order": ["c", "b", "d", "a"],
           "tests": [{"interval": "1m", "input_series": [{"series": 'temp{gpu="0"}', "values": "1x5"},
                                                         {"series": '{__name__="up", job="x"}', "values": "1x5"}]}]}
    out = live_rules.pruned(doc, tmp_path)
    assert out["group_eval_order"] == ["c", "a"] and len(out["rule_files"]) == 1 and out["tests"] == doc["tests"]
    groups = yaml.safe_load(open(out["rule_files"][0]))["groups"]
    assert groups == [{"name": "a", "interval": "1m", "rules": [{"record": "x:max", "expr": "max(temp)"}]},
                      {"name": "c", "rules": [{"alert": "Hot", "expr": "x:max > 90", "for": "5m", "labels": {"severity": "page"}}]}]
    assert live_rules.series_name('{__name__="up", job="x"}') == "up" and live_rules.series_name(" temp{a='b'}") == "temp"


@pytest.mark.equality
def test_the_live_rules_write_every_series_and_alert_that_all_rules_write(rendered, promtool, tmp_path):
    """Fault scenarios side by side (a lost node, a GB200 fabric fault, an MMU fault: records of every level,
    alerts that read ALERTS, absent() alerts), replayed with every rule and with the live ones: the same
    samples of every record and alert at every evaluation, and most rules left out."""
    names = ["gpu-lost-every-gpu", "nvlink-fabric-gb200-nvl72", "xid-31-mmu-fault"]
    doc = batches.merged([batches.load(rendered / "tests" / "promtool" / f"{n}.yaml") for n in names])
    (test,) = doc["tests"]
    end = max(parse_duration(str(q["eval_time"])) for q in test["promql_expr_test"])
    test["promql_expr_test"] = se.listings(".+:.+|ALERTS", end, parse_duration(doc["evaluation_interval"]))
    every, _ = se._run(promtool, doc, tmp_path, "every", prune=False)
    live, _ = se._run(promtool, doc, tmp_path, "live")
    written = {name for name, _ in every.samples}
    assert len(written) > 30 and "ALERTS" in written, sorted(written)
    assert live.samples == every.samples
    files = [yaml.safe_load(open(f)) for f in doc["rule_files"]]
    kept = [yaml.safe_load(open(f)) for f in (tmp_path / "live-live-rules").glob("*.yaml")]
    count = lambda fs: sum(len(g["rules"]) for f in fs for g in f["groups"])  # noqa: E731
    assert count(kept) < count(files) * 2 / 3, (count(kept), count(files))
