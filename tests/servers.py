"""Real servers for the tests, on 127.0.0.1 with a free port and a temporary data directory:
Prometheus, victoria-metrics single-node, vmalert and Alertmanager. Context managers that always stop
the process; a server that does not come up (bad flags, a port in use) raises with its binary's name
and the tail of its log."""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from rulesgen import processes


def port_taken(port: int) -> bool:
    """Something already accepts connections on 127.0.0.1:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


class Server:
    """One server binary with its output in `log`: start() waits until `ready_path` answers (or fails
    naming the binary, with its log tail), stop() always reaps it, restart() runs the same command
    again (same port, same data)."""

    def __init__(self, name: str, cmd: list[str], port: int, log: Path, ready_path: str, timeout: float = 60,
                 cwd: Path | None = None):
        self.name, self.cmd, self.port, self.log, self.cwd = name, [str(c) for c in cmd], port, Path(log), cwd
        self.url = f"http://127.0.0.1:{port}"
        self.ready_path, self.timeout = ready_path, timeout
        self.proc: subprocess.Popen | None = None

    def start(self):
        taken = port_taken(self.port)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.cmd, stdout=out, stderr=subprocess.STDOUT, cwd=self.cwd)
        try:
            if taken:  # another process would answer for it: wait for ours to give up on the port
                try:
                    self.proc.wait(timeout=self.timeout)
                except subprocess.TimeoutExpired:
                    pass
                raise processes.NotReady(f"port {self.port} is already in use")
            processes.wait_ready(self.proc, self.url + self.ready_path, timeout=self.timeout, poll=0.1)
            time.sleep(0.5)  # a server can answer its health check, then give up on the rest of its config
            if self.proc.poll() is not None:
                raise processes.NotReady(f"exited ({self.proc.returncode}) just after it answered")
        except processes.NotReady as exc:
            self.stop()
            raise RuntimeError(f"{self.name} ({self.cmd[0]}): {exc}; its log ends:\n{self.tail()}") from None
        return self

    def stop(self, timeout: float = 20) -> None:
        if self.proc is not None:
            processes.stop(self.proc, timeout=timeout)

    def restart(self):
        self.stop()
        return self.start()

    def tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, *exc):
        self.stop()

    def query(self, expr: str, at: float | None = None) -> list[dict]:
        return query(self.url, expr, at)

    def get_json(self, path: str) -> dict:
        with urllib.request.urlopen(self.url + path, timeout=30) as r:
            return json.loads(r.read())


def blocks_from_openmetrics(promtool: str, text: str, data: Path) -> Path:
    """TSDB blocks in `data` (a Prometheus data directory) of the samples of `text` (OpenMetrics, `# EOF` at its end),
    by `promtool tsdb create-blocks-from openmetrics`; the raw file is kept beside `data`."""
    raw = data.with_name(data.name + ".om")
    raw.write_text(text)
    subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(raw), str(data)], check=True, capture_output=True)
    return data


class Prometheus(Server):
    """prometheus with a given data dir; without `config`, no scrape jobs."""

    def __init__(self, binary: str, data: Path, config: str = "global: {scrape_interval: 1m}\n", args: tuple = ()):
        self.config = data.parent / "prometheus.yml"
        self.config.write_text(config)
        port = processes.free_port()
        super().__init__("prometheus", [binary, f"--config.file={self.config}", f"--storage.tsdb.path={data}",
                                        f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=30d", *args],
                         port, data.parent / "prometheus.log", "/-/ready")
        self.binary, self.data = binary, data


DEBIAN_ASSETS = b"/usr/share/prometheus/alertmanager"


def runnable_alertmanager(binary: str, workdir: Path) -> str:
    """Debian's alertmanager reads its default notification templates from /usr/share/prometheus/alertmanager
    (a Debian patch: upstream embeds them) and exits without them. Unpacked into .tools/ rather than
    installed, they sit in the package's own usr/share: run a copy of the binary whose path is a relative
    one of the same length, `am-templates` in the server's working directory, holding the package's files."""
    path = Path(binary).resolve()
    data = path.read_bytes()
    shipped = path.parents[1] / "share" / "prometheus" / "alertmanager"
    if DEBIAN_ASSETS not in data or Path(DEBIAN_ASSETS.decode(), "default.tmpl").exists() or not shipped.is_dir():
        return binary
    rel = b"am-templates"
    rel = b"./" * ((len(DEBIAN_ASSETS) - len(rel)) // 2) + rel
    assert len(rel) == len(DEBIAN_ASSETS)
    copy = workdir / "alertmanager-bin"
    copy.write_bytes(data.replace(DEBIAN_ASSETS, rel))
    copy.chmod(0o755)
    shutil.copytree(shipped, workdir / "am-templates", dirs_exist_ok=True)
    return str(copy)


class Alertmanager(Server):
    """alertmanager with `config` (YAML text), alone (no cluster port), run in `workdir`."""

    def __init__(self, binary: str, workdir: Path, config: str):
        self.config = workdir / "alertmanager.yml"
        self.config.write_text(config)
        port = processes.free_port()
        super().__init__("alertmanager", [runnable_alertmanager(binary, workdir), f"--config.file={self.config}",
                                          f"--storage.path={workdir / 'am-data'}", f"--web.listen-address=127.0.0.1:{port}",
                                          "--cluster.listen-address=", "--log.level=info"],
                         port, workdir / "alertmanager.log", "/-/ready", cwd=workdir)


class VMAlert(Server):
    """vmalert evaluating `rules` against `datasource` (a victoria-metrics URL), writing and restoring its
    state there, notifying `notifier`."""

    def __init__(self, binary: str, workdir: Path, rules: list[Path], datasource: str, notifier: str, args: tuple = ()):
        port = processes.free_port()
        super().__init__("vmalert", [binary, *[f"-rule={r}" for r in rules], f"-datasource.url={datasource}",
                                     f"-remoteWrite.url={datasource}", f"-remoteRead.url={datasource}",
                                     f"-notifier.url={notifier}", f"-httpListenAddr=127.0.0.1:{port}", *args],
                         port, workdir / "vmalert.log", "/health")


class VictoriaMetrics(Server):
    """victoria-metrics with a temporary storage dir, removed at the end. By default set up for
    backfills (raw data days in the past, no cache, no latency offset); `args` replace those flags
    (e.g. a -promscrape.config for a live server with the defaults a user runs)."""

    BACKFILL = ("-retentionPeriod=100y",       # the test's raw data lie days in the past
                "-search.disableCache",         # vmalert writes into the past: never serve cached answers
                "-search.latencyOffset=0s",
                "-search.maxPointsPerTimeseries=100000",
                "-maxInsertRequestSize=1GB",    # vmalert sends what is left in its queue in one request
                "-loggerLevel=ERROR")

    def __init__(self, binary: str, args: tuple | None = None, workdir: Path | None = None):
        self.binary = binary
        self._own = workdir is None
        self.dir = str(workdir) if workdir else tempfile.mkdtemp(prefix="rulesgen-vm-")
        port = processes.free_port()
        super().__init__("victoria-metrics", [self.binary, f"-storageDataPath={self.dir}/data", f"-httpListenAddr=127.0.0.1:{port}",
                                              *(self.BACKFILL if args is None else args)],
                         port, Path(self.dir, "victoria-metrics.log"), "/health", timeout=30)

    def __exit__(self, *exc) -> None:
        self.stop(timeout=15)
        if self._own:
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



def query(url: str, expr: str, at: float | None = None) -> list[dict]:
    """An instant query through the Prometheus HTTP API (both servers speak it); `at` None: now."""
    qs = urllib.parse.urlencode({"query": expr} if at is None else {"query": expr, "time": str(at)})
    with urllib.request.urlopen(f"{url}/api/v1/query?{qs}", timeout=60) as r:
        return json.loads(r.read())["data"]["result"]
