"""rulesgen/catalog/routing.py: alertmanager.yaml's route timings, a receiver per severity and the silences."""
from types import SimpleNamespace

from rulesgen.catalog.routing import read_routing
from rulesgen.errors import Collector
from unit_yaml import printed, written

# read_routing reads a failure mode's id and its thresholds' names only
MODES = [SimpleNamespace(id="gpu_lost", thresholds=[SimpleNamespace(name="stale_seconds")]),
         SimpleNamespace(id="exporter_down", thresholds=[])]
ROUTING = """\
route:
  group_wait: {value: 30s, source: a}
  group_interval: {value: 5m, source: b}
  repeat_interval: {value: 4h, source: c}
severities:
  - {severity: critical, receiver: page, repeat_interval: 1h, source: d, group_wait: {value: 10s, source: i}}
  - {severity: warning, receiver: ticket, source: e}
  - {severity: info, receiver: none, source: f}
silences:
  - {failure_mode: gpu_lost, scope: gpu, detected_within: stale_seconds, source: g}
  - {failure_mode: exporter_down, scope: node, source: h}
"""


def test_timings_receivers_and_silences(tmp_path):
    _, doc = written(tmp_path, "alertmanager.yaml", ROUTING)
    errors = Collector()
    routing = read_routing(doc, errors, MODES)
    assert errors.items == []
    assert (routing.group_wait, routing.group_interval, routing.repeat_interval) == (30, 300, 14400)
    assert [(r.severity, r.receiver, r.repeat_interval, r.source, r.group_wait) for r in routing.severities] == [
        ("critical", "page", 3600, "d", 10), ("warning", "ticket", None, "e", None), ("info", "none", None, "f", None)]

    assert [(s.failure_mode, s.scope, s.detected_within, s.where.line) for s in routing.silences] == [
        ("gpu_lost", "gpu", "stale_seconds", 10), ("exporter_down", "node", "", 11)]


def test_a_severity_group_wait_needs_its_source(tmp_path):
    path, doc = written(tmp_path, "alertmanager.yaml", ROUTING.replace("group_wait: {value: 10s, source: i}",
                                                                       "group_wait: {value: 10s}"))
    errors = Collector()
    read_routing(doc, errors, MODES)
    assert [e.split(": error")[1] for e in printed(errors)] == [
        "[missing-key]: severity critical group_wait: missing required key 'source'"]


def test_planted_mistakes_are_each_an_error_at_its_line(tmp_path):
    text = (ROUTING.replace("  - {severity: info, receiver: none, source: f}\n", "")
            .replace("detected_within: stale_seconds", "detected_within: stale")
            .replace("failure_mode: exporter_down", "failure_mode: exporter_dwn")
            .replace("group_interval: {value: 5m", "group_interval: {value: 5 min"))
    path, doc = written(tmp_path, "alertmanager.yaml", text)
    errors = Collector()
    routing = read_routing(doc, errors, MODES)
    assert routing.group_interval == 300  # the default stands in for the bad one; the error is reported
    assert printed(errors) == [
        f"{path}:3:20: error[bad-duration]: route group_interval.value: '5 min' is not a duration like 30s, 5m, 1h30m",
        f"{path}:5:1: error[missing-key]: alertmanager.yaml: no route for severity info",
        f"{path}:9:42: error[unknown-threshold]: alertmanager.yaml: silence gpu_lost detected_within names 'stale', "
        "not a threshold of gpu_lost (known: stale_seconds)",
        f"{path}:10:6: error[unknown-failure-mode]: alertmanager.yaml: silence names failure mode 'exporter_dwn': "
        "not in failure_modes.yaml (did you mean 'exporter_down'?)",
    ]


def test_an_unknown_receiver_and_key_name_their_lines(tmp_path):
    text = ROUTING.replace("receiver: ticket", "receiver: tickets").replace("scope: node, source: h",
                                                                             "scope: node, source: h, note: x")
    path, doc = written(tmp_path, "alertmanager.yaml", text)
    errors = Collector()
    read_routing(doc, errors, MODES)
    assert printed(errors) == [
        f"{path}:7:25: error[bad-value]: severity route.receiver must be one of none, page, ticket, got 'tickets' "
        "(did you mean 'ticket'?)",
        f"{path}:11:59: error[unknown-key]: silence: unknown key 'note'",
    ]
