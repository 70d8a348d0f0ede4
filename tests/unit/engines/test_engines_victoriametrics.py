"""rulesgen/engines/victoriametrics.py without vmalert: its only job is to run `vmalert -replay.*`, so
processes.run is replaced by a fake returning an output written here; what is tested is the command it
builds and how it reads vmalert's log (an error line fails the run even with exit code 0)."""
import subprocess
from pathlib import Path

import pytest

from rulesgen import processes
from rulesgen.engines.victoriametrics import VictoriaMetricsError, run_vmalert

START, END = 1_767_225_600, 1_767_229_200  # 2026-01-01T00:00:00Z, one hour later
OK_LOG = "2026-01-01T00:00:01.000Z\tinfo\tapp/vmalert/replay.go:80\treplay finished\n"
WARN_LOG = "2026-01-01T00:00:01.000Z\twarn\tapp/vmalert/remotewrite.go:1\tattempt 1 failed, retrying\n"
ERROR_LOG = "2026-01-01T00:00:02.000Z\terror\tapp/vmalert/remotewrite.go:2\tbatch dropped after 5 attempts\n"


@pytest.fixture
def vmalert(monkeypatch):
    calls, said = [], {"rc": 0, "out": "", "err": OK_LOG}

    def fake(cmd, timeout=None, **_):
        calls.append((cmd, timeout))
        return subprocess.CompletedProcess(cmd, said["rc"], said["out"], said["err"])
    monkeypatch.setattr(processes, "run", fake)
    return calls, said


def test_the_replay_command(vmalert):
    calls, _ = vmalert
    assert run_vmalert("http://vm:8428", Path("rules/day.yaml"), START, END, 3600, vmalert="/opt/vmalert",
                       write_url="http://vm-insert:8480") == OK_LOG
    [(cmd, timeout)] = calls
    assert timeout == 600 and cmd[0] == "/opt/vmalert"
    flags = dict(arg.split("=", 1) for arg in cmd[1:] if "=" in arg)
    assert flags["-rule"] == str(Path("rules/day.yaml"))
    assert (flags["-datasource.url"], flags["-remoteWrite.url"]) == ("http://vm:8428", "http://vm-insert:8480")
    assert (flags["-replay.timeFrom"], flags["-replay.timeTo"]) == ("2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z")
    assert flags["-evaluationInterval"] == flags["-datasource.queryStep"] == "3600s"
    assert flags["-httpListenAddr"] == "127.0.0.1:0" and "-replay.disableProgressBar" in cmd


def test_writes_go_back_to_the_read_url_by_default(vmalert):
    calls, _ = vmalert
    run_vmalert("http://vm:8428", Path("r.yaml"), START, END, 60, vmalert="vmalert", timeout=None)
    [(cmd, timeout)] = calls
    assert "-remoteWrite.url=http://vm:8428" in cmd and timeout is None and "-evaluationInterval=60s" in cmd


def test_a_retried_warning_passes_but_an_error_line_fails_even_with_exit_0(vmalert):
    _, said = vmalert
    said["err"] = OK_LOG + WARN_LOG
    assert run_vmalert("http://vm:8428", Path("r.yaml"), START, END, 60, vmalert="vmalert").endswith(WARN_LOG)
    said["err"] = OK_LOG + WARN_LOG + ERROR_LOG
    with pytest.raises(VictoriaMetricsError) as info:
        run_vmalert("http://vm:8428", Path("day-1.yaml"), START, END, 60, vmalert="vmalert")
    assert str(info.value) == "vmalert replay of day-1.yaml failed (exit 0):\n" + ERROR_LOG.rstrip("\n")


def test_a_non_zero_exit_fails_with_the_logs_tail(vmalert):
    _, said = vmalert
    said.update(rc=1, out="", err="".join(f"line {i}\n" for i in range(50)))
    with pytest.raises(VictoriaMetricsError) as info:
        run_vmalert("http://vm:8428", Path("r.yaml"), START, END, 60, vmalert="vmalert")
    lines = str(info.value).splitlines()
    assert lines[0] == "vmalert replay of r.yaml failed (exit 1):" and lines[1:] == [f"line {i}" for i in range(10, 50)]
