"""An alert's whole trip, live (`make test-live`; not part of `make test`): a synthetic dcgm-exporter
(tests/live/synthetic_exporter.py, one endpoint per node) scraped by a real Prometheus 3.5, and again by
a real victoria-metrics with vmalert 1.145, evaluating the files `rulesgen render` writes for a
rulesgen.yaml with a 5 s scrape and evaluation interval, notifying a real Alertmanager whose config
merges the rendered alertmanager/rulesgen.yaml (route and inhibit_rules, as the README says) with
receivers pointing at a local webhook (tests/live/webhook.py). The script flips faults on the exporter
and asserts on what the webhook got, and on what it must not get:

1. healthy load: no notification;
2. a double-bit ECC error on one GPU: one critical notification naming the GPU, node and job;
3. the job's pods deleted: no RESOLVED, no second alert;
4. Prometheus (vmalert) restarted: no second notification, the alert still firing, its activeAt kept;
5. the same GPU lost while the exporter answers: gpu_lost, and nothing about its other alerts;
6. the single-GPU inference node's only GPU stops reporting (its exporter answers): gpu_lost;
7. the training node's exporter stopped: exporter_down, nothing about that node's other alerts
   (started with 6, on another node: exporter_down's `for` covers both);
8. recovery: RESOLVED for what recovered, nothing else; and every page or ticket of the trip
   RESOLVED by the end (an alert that resolves while inhibited is never sent as RESOLVED by
   Alertmanager, prometheus/alertmanager#2754: its page would stay open).

Alertmanager runs the rendered group_wait (30 s; a page's route 10 s) and group_interval 10s instead of the
rendered 5m (test only): with 5m no RESOLVED could be told apart from its absence in a short test. vmalert
evaluates the rendered VMRule objects' groups (deploy/victoriametrics-operator/ written out as rule files):
their eval_delay and latency_offset param (outputs.vmrule.eval_delay, 10 s) against vmalert's and
victoria-metrics' default flags. The test's rulesgen.yaml also sets (user settings, defaults in brackets)
`keep_firing_for: 90s` (5m), exporter_down's `for: 1m` (5m) and gpu_lost's `stale_seconds: 20` (60, two of
dcgm-exporter's default 30 s collections; here the exporter answers every 5 s): the recovery chain
(exporter_down resolves, then the lost GPU's alerts one hold later, then its ECC alert) and the dark node
would otherwise take 20 of the test's minutes. Every other timing (the rules' other `for`, Prometheus' resend
delay and for-outage tolerance) is the default, except Prometheus' --rules.alert.for-grace-period (30s: README
"Deploying" says why). The two engines run at the same time. Each step's seconds from the fault to the
webhook are asserted within its failure mode's class target (benchmarks/latency_targets.yaml: certain hardware
2 minutes, health thresholds 5) and go to benchmarks/results/live-latency.md, with the same latencies recounted for
the rendered group_interval (`make bench` prints that file)."""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from live_report import write_results
from live_settings import ABORT, ENGINES, TOOLS
from live_trip import Trip, run_trip
from servers import Alertmanager, Prometheus, VictoriaMetrics, VMAlert


pytestmark = [pytest.mark.live, pytest.mark.engines]


@pytest.fixture(scope="module", autouse=True)
def _tools(prometheus_bin, victoria_metrics, vmalert, alertmanager_bin, amtool):
    TOOLS.update({"prometheus": prometheus_bin, "victoria-metrics": victoria_metrics, "vmalert": vmalert,
                  "alertmanager": alertmanager_bin, "amtool": amtool})


@pytest.fixture(scope="module")
def trips(tmp_path_factory) -> dict[str, Trip]:
    """Both engines' trips, run at the same time (each with its own exporters, Alertmanager, webhook)."""
    with ThreadPoolExecutor(len(ENGINES)) as pool:
        futures = {name: pool.submit(run_trip, name, tmp_path_factory.mktemp(name)) for name in ENGINES}
        try:
            result = {name: f.result() for name, f in futures.items()}
        except BaseException:  # Ctrl-C: the scripts stop at their next poll and stop their servers
            ABORT.set()
            raise
    write_results(result)
    return result


@pytest.mark.parametrize("engine", ENGINES)
def test_an_alert_trip_from_exporter_to_receiver(trips, engine):
    trip = trips[engine]
    assert trip.error is None, f"{engine} ({trip.duration:.0f} s):\n{trip.error}"


def test_a_server_on_a_port_in_use_names_its_binary_and_shows_its_log(tmp_path):
    """Every server class fails clearly on a taken port, and leaves nothing running."""
    import socket
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        makers = {
            "prometheus": lambda d: Prometheus(TOOLS["prometheus"], d / "data"),
            "alertmanager": lambda d: Alertmanager(TOOLS["alertmanager"], d, "route: {receiver: x}\nreceivers: [{name: x}]\n"),
            "victoria-metrics": lambda d: VictoriaMetrics(TOOLS["victoria-metrics"], args=(), workdir=d),
            "vmalert": lambda d: VMAlert(TOOLS["vmalert"], d, [], "http://127.0.0.1:1", "http://127.0.0.1:1"),
        }
        for name, make in makers.items():
            d = tmp_path / name
            d.mkdir()
            server = make(d)
            server.port, server.url = port, f"http://127.0.0.1:{port}"
            server.cmd = [re.sub(r"(?i)(listen[a-z.-]*=127\.0\.0\.1):\d+$", rf"\g<1>:{port}", c) for c in server.cmd]
            with pytest.raises(RuntimeError) as info:
                with server:
                    pass
            message = str(info.value)
            assert message.startswith(f"{name} (") and f"port {port} is already in use" in message, message
            assert "address already in use" in message, message  # the binary's own words, from its log
            assert server.proc.poll() is not None


def test_a_server_that_exits_at_once_shows_its_log(tmp_path):
    server = Alertmanager(TOOLS["alertmanager"], tmp_path, "route: {receiver: nowhere}\nreceivers: []\n")
    with pytest.raises(RuntimeError) as info:
        with server:
            pass
    assert str(info.value).startswith("alertmanager (") and "exited" in str(info.value)
    assert "nowhere" in str(info.value), str(info.value)   # Alertmanager's complaint about the undefined receiver
