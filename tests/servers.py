"""Real servers for the tests, on 127.0.0.1 with a free port and a temporary data directory:
Prometheus (no scrape jobs) and victoria-metrics single-node. Context managers that always stop
the process."""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

from rulesgen import processes
from rulesgen.tools import find_tool


class Prometheus:
    """prometheus with a given data dir and no scrape jobs."""

    def __init__(self, binary: str, data: Path):
        self.binary, self.data, self.port = binary, data, processes.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = None

    def __enter__(self):
        config = self.data.parent / "prometheus.yml"
        config.write_text("global: {scrape_interval: 1m}\n")
        self.proc = subprocess.Popen(
            [self.binary, f"--config.file={config}", f"--storage.tsdb.path={self.data}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=30d"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            processes.wait_ready(self.proc, self.url + "/-/ready", timeout=60, poll=0.3)
        except processes.NotReady as exc:
            processes.stop(self.proc)
            raise RuntimeError(f"prometheus: {exc}:\n" + self.proc.stderr.read()[-2000:]) from None
        return self

    def __exit__(self, *exc):
        processes.stop(self.proc, timeout=20)

    def query(self, expr: str, at: int) -> list[dict]:
        return query(self.url, expr, at)


class VictoriaMetrics:
    """victoria-metrics with a temporary storage dir, removed at the end."""

    def __init__(self, binary: str | None = None):
        self.binary = binary or find_tool("victoria-metrics")
        self.proc: subprocess.Popen | None = None
        self.dir = ""
        self.url = ""

    def __enter__(self) -> "VictoriaMetrics":
        self.dir = tempfile.mkdtemp(prefix="rulesgen-vm-")
        port = processes.free_port()
        self.url = f"http://127.0.0.1:{port}"
        self._log = open(Path(self.dir, "victoria-metrics.log"), "wb")
        self.proc = subprocess.Popen(
            [self.binary, f"-storageDataPath={self.dir}/data", f"-httpListenAddr=127.0.0.1:{port}",
             "-retentionPeriod=100y",       # the test's raw data lie days in the past
             "-search.disableCache",         # vmalert writes into the past: never serve cached answers
             "-search.latencyOffset=0s",
             "-search.maxPointsPerTimeseries=100000",
             "-maxInsertRequestSize=1GB",    # vmalert sends what is left in its queue in one request
             "-loggerLevel=ERROR"],
            stdout=self._log, stderr=subprocess.STDOUT)
        try:
            processes.wait_ready(self.proc, self.url + "/health", timeout=30, poll=0.05)
        except processes.NotReady as exc:
            self.__exit__()
            raise RuntimeError(f"victoria-metrics: {exc}") from None
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            processes.stop(self.proc, timeout=15)
            self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _get(self, path: str, params: dict | None = None) -> bytes:
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        with urllib.request.urlopen(url, timeout=120) as r:
            return r.read()

    def import_samples(self, series) -> None:
        """(labels with __name__, [(ms, value)]) pairs through /api/v1/import (JSON lines)."""
        lines = [json.dumps({"metric": labels, "values": [v for _, v in points], "timestamps": [ms for ms, _ in points]})
                 for labels, points in series]
        req = urllib.request.Request(self.url + "/api/v1/import", data="\n".join(lines).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=300) as r:
            r.read()

    def flush(self) -> None:
        """Make everything ingested so far searchable."""
        self._get("/internal/force_flush")

    def export(self, match: str, start: int, end: int) -> list[tuple[dict[str, str], list[int], list]]:
        """Raw samples of the series matching `match` in [start, end] (seconds)."""
        body = self._get("/api/v1/export", {"match[]": match, "start": str(start), "end": str(end)})
        rows = [json.loads(line) for line in body.splitlines() if line.strip()]
        return [(d["metric"], d["timestamps"], d["values"]) for d in rows]

    def query(self, expr: str, at: int) -> list[dict]:
        return query(self.url, expr, at)


def query(url: str, expr: str, at: int) -> list[dict]:
    """An instant query through the Prometheus HTTP API (both servers speak it)."""
    qs = urllib.parse.urlencode({"query": expr, "time": str(at)})
    with urllib.request.urlopen(f"{url}/api/v1/query?{qs}", timeout=60) as r:
        return json.loads(r.read())["data"]["result"]
