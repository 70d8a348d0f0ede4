"""rulesgen/builders/alertmanager.py: the route tree and inhibit rules from a Routing and the covers, on small
hand-made inputs (tests/test_render.py and amtool check the rendered file)."""
from dataclasses import replace

from rulesgen.builders.alertmanager import build_alertmanager
from rulesgen.builders.covers import Inhibit
from rulesgen.load.settings import AlertmanagerSettings, Settings
from rulesgen.model.catalog import Routing, SeverityRoute, Silence

ROUTING = Routing(group_wait=15, group_interval=120, repeat_interval=7200, severities=(
    SeverityRoute(severity="critical", receiver="page", repeat_interval=1800, source="s", group_wait=5),
    SeverityRoute(severity="warning", receiver="ticket", repeat_interval=None, source="s"),
    SeverityRoute(severity="info", receiver="none", repeat_interval=None, source="s")), silences=(
    Silence(failure_mode="gpu_lost", scope="gpu", source="s"), Silence(failure_mode="exporter_down", scope="node", source="s")))
SETTINGS = replace(Settings(), host_label="node", cluster_label="region",
                   alertmanager=AlertmanagerSettings(page_receiver="oncall", ticket_receiver="queue", null_receiver="void"))


def test_routes_group_by_cluster_host_and_mode_with_a_receiver_per_severity():
    am = build_alertmanager(SETTINGS, ROUTING)
    timings = {"group_wait": "15s", "group_interval": "2m", "repeat_interval": "2h"}
    assert {k: am.route[k] for k in ("receiver", "group_by", *timings)} == {
        "receiver": "void", "group_by": ["region", "node", "failure_mode"], **timings}
    (mine,) = am.route["routes"]
    # the timings sit on routes[0] too: users merge it under their own root
    assert {k: mine[k] for k in timings} == timings
    assert mine["matchers"] == ['failure_mode=~".+"'] and mine["receiver"] == "void"
    assert mine["routes"] == [{"matchers": ['severity="critical"'], "receiver": "oncall", "group_wait": "5s",
                               "repeat_interval": "30m"},
                              {"matchers": ['severity="warning"'], "receiver": "queue"},
                              {"matchers": ['severity="info"'], "receiver": "void"}]
    assert am.receivers == ("oncall", "queue", "void")


def test_a_silence_mutes_every_other_mode_on_its_gpu_or_node():
    am = build_alertmanager(SETTINGS, ROUTING)
    assert list(am.inhibit_rules) == [
        {"source_matchers": ['failure_mode="gpu_lost"'], "target_matchers": ['failure_mode!="gpu_lost"'],
         "equal": list(SETTINGS.gpu_identity)},
        {"source_matchers": ['failure_mode="exporter_down"'], "target_matchers": ['failure_mode!="exporter_down"'],
         "equal": list(SETTINGS.node_labels)}]
    assert "node" in SETTINGS.gpu_identity and "gpu" in SETTINGS.gpu_identity
    assert list(SETTINGS.node_labels) == ["region", "node"]


def test_covers_inhibit_the_symptom_on_the_same_gpu():
    covers = [Inhibit("ecc_uncorrectable", (), "xid_error", "", "", ()),
              Inhibit("gpu_lost", ("critical",), "dcgm_health", "warning", "health_error_code",
                      ("DCGM_FR_A", "DCGM_FR_B")),
              Inhibit("thermal", ("critical", "warning"), "dcgm_health", "", "health_error_code", ("DCGM_FR_T",))]
    rules = build_alertmanager(SETTINGS, replace(ROUTING, silences=()), covers).inhibit_rules
    gpu = list(SETTINGS.gpu_identity)
    assert list(rules) == [
        {"source_matchers": ['failure_mode="ecc_uncorrectable"'], "target_matchers": ['failure_mode="xid_error"'],
         "equal": gpu},
        {"source_matchers": ['failure_mode="gpu_lost"', 'severity="critical"'],
         "target_matchers": ['failure_mode="dcgm_health"', 'severity="warning"', 'health_error_code=~"DCGM_FR_A|DCGM_FR_B"'],
         "equal": gpu},
        {"source_matchers": ['failure_mode="thermal"', 'severity=~"critical|warning"'],
         "target_matchers": ['failure_mode="dcgm_health"', 'health_error_code="DCGM_FR_T"'], "equal": gpu}]


def test_one_receiver_for_everything_is_listed_once():
    settings = replace(SETTINGS, alertmanager=AlertmanagerSettings("all", "all", "all"))
    assert build_alertmanager(settings, ROUTING).receivers == ("all",)


def test_the_bundled_routing_pages_critical_only():
    from unit_build import bundled
    b = bundled()
    routes = build_alertmanager(b.settings, b.catalog.routing).route["routes"][0]["routes"]
    by_severity = {r["matchers"][0]: r["receiver"] for r in routes}
    assert by_severity == {'severity="critical"': "gpu-pager", 'severity="warning"': "gpu-tickets",
                           'severity="info"': "gpu-null"}
    # pages wait 10 s for their group, not the route's 30 s (the certain-hardware class target is 2 minutes)
    assert {r["matchers"][0]: r.get("group_wait") for r in routes} == {
        'severity="critical"': "10s", 'severity="warning"': None, 'severity="info"': None}
