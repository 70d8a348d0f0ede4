"""`rulesgen push`: dashboards into a Grafana folder, idempotent by uid, with clear failures.

No Grafana server can be installed on this machine, so a small threaded HTTP server on 127.0.0.1
stands in for Grafana. It implements exactly the endpoints push calls, as Grafana's HTTP API
documents them: GET /api/folders, POST /api/folders, POST /api/dashboards/db (overwrite by uid), with
Bearer-token authentication (401 otherwise).
"""
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import run_cli
from rulesgen.processes import free_port
from rulesgen.engines.push import PushError, push

TOKEN = "glsa_test-secret-token-0123456789"


class FakeGrafana(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, delay: float = 0.0):
        super().__init__(("127.0.0.1", 0), GrafanaHandler)
        self.delay = delay
        self.folders: dict[str, dict] = {}
        self.dashboards: dict[str, dict] = {}
        self.requests: list[tuple[str, str, dict | None]] = []
        self.lock = threading.Lock()

    def handle_error(self, request, client_address):
        """A client that gave up (the timeout test) breaks the pipe: expected, not worth a traceback."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class GrafanaHandler(BaseHTTPRequestHandler):
    server: FakeGrafana

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _answer(self, status: int, body) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        time.sleep(self.server.delay)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        with self.server.lock:
            self.server.requests.append((method, self.path, body))
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._answer(401, {"message": "invalid API key"})
        with self.server.lock:
            if (method, self.path) == ("GET", "/api/folders"):
                return self._answer(200, list(self.server.folders.values()))
            if (method, self.path) == ("POST", "/api/folders"):
                folder = {"uid": body["uid"], "title": body["title"]}
                self.server.folders[folder["uid"]] = folder
                return self._answer(200, folder)
            if (method, self.path) == ("POST", "/api/dashboards/db"):
                return self._save_dashboard(body)
        return self._answer(404, {"message": "not found"})

    def _save_dashboard(self, body) -> None:
        dashboard = body["dashboard"]
        if body.get("folderUid") not in self.server.folders:
            return self._answer(400, {"message": "folder not found"})
        uid = dashboard["uid"]
        if uid in self.server.dashboards and not body.get("overwrite"):
            return self._answer(412, {"message": "A dashboard with the same uid already exists", "status": "name-exists"})
        version = self.server.dashboards.get(uid, {}).get("version", 0) + 1
        self.server.dashboards[uid] = {**dashboard, "version": version, "folderUid": body["folderUid"]}
        self._answer(200, {"id": len(self.server.dashboards), "uid": uid, "url": f"/d/{uid}/x", "status": "success",
                           "version": version})

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")


POLL = 0.02  # seconds between shutdown checks: serve_forever's default (0.5) is half a second per test


@pytest.fixture
def grafana():
    server = FakeGrafana()
    thread = threading.Thread(target=server.serve_forever, args=(POLL,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def slow_grafana():
    server = FakeGrafana(delay=2.0)
    thread = threading.Thread(target=server.serve_forever, args=(POLL,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


DASHBOARDS = [{"uid": "rg-a", "title": "A", "schemaVersion": 39, "panels": []},
              {"uid": "rg-b", "title": "B", "schemaVersion": 39, "panels": []}]


def test_push_creates_the_folder_and_the_dashboards(grafana):
    pushed = push(grafana.url, TOKEN, DASHBOARDS, "GPU", "rg-folder", timeout=5)
    assert [p.uid for p in pushed] == ["rg-a", "rg-b"] and [p.version for p in pushed] == [1, 1]
    assert grafana.folders == {"rg-folder": {"uid": "rg-folder", "title": "GPU"}}
    assert {uid: d["folderUid"] for uid, d in grafana.dashboards.items()} == {"rg-a": "rg-folder", "rg-b": "rg-folder"}
    assert [(m, p) for m, p, _ in grafana.requests] == [
        ("GET", "/api/folders"), ("POST", "/api/folders"), ("POST", "/api/dashboards/db"), ("POST", "/api/dashboards/db")]
    assert all(body["overwrite"] is True and body["dashboard"]["id"] is None
               for m, p, body in grafana.requests if p == "/api/dashboards/db")


def test_second_push_overwrites_by_uid_without_duplicates(grafana):
    push(grafana.url, TOKEN, DASHBOARDS, "GPU", "rg-folder", timeout=5)
    again = push(grafana.url, TOKEN, DASHBOARDS, "GPU", "rg-folder", timeout=5)
    assert sorted(grafana.dashboards) == ["rg-a", "rg-b"] and len(grafana.folders) == 1
    assert [p.version for p in again] == [2, 2]
    assert sum(p == "/api/folders" and m == "POST" for m, p, _ in grafana.requests) == 1


def test_existing_folder_with_that_title_is_reused(grafana):
    grafana.folders["made-by-hand"] = {"uid": "made-by-hand", "title": "GPU"}
    push(grafana.url, TOKEN, DASHBOARDS[:1], "GPU", "rg-folder", timeout=5)
    assert grafana.dashboards["rg-a"]["folderUid"] == "made-by-hand" and len(grafana.folders) == 1


def test_wrong_token_is_an_authentication_error_without_the_token(grafana):
    with pytest.raises(PushError) as err:
        push(grafana.url, "wrong-token", DASHBOARDS, "GPU", "rg-folder", timeout=5)
    assert "authentication failed (HTTP 401: invalid API key)" in str(err.value)
    assert "wrong-token" not in str(err.value) and not grafana.dashboards


def test_timeout_is_reported(slow_grafana):
    started = time.monotonic()
    with pytest.raises(PushError, match=r"did not answer within 0.3s"):
        push(slow_grafana.url, TOKEN, DASHBOARDS, "GPU", "rg-folder", timeout=0.3)
    assert time.monotonic() - started < 2


def test_unreachable_server_is_reported():
    with pytest.raises(PushError, match="cannot connect to Grafana at http://127.0.0.1:"):
        push(f"http://127.0.0.1:{free_port()}", TOKEN, DASHBOARDS, "GPU", "rg-folder", timeout=2)


def test_other_http_errors_carry_status_and_grafana_message(grafana):
    with pytest.raises(PushError, match=r"POST /api/dashboards/db: HTTP 400: folder not found"):
        from rulesgen.engines.push import GrafanaClient
        GrafanaClient(grafana.url, TOKEN, 5).call("POST", "/api/dashboards/db",
                                                  {"dashboard": DASHBOARDS[0], "folderUid": "nope"})


def test_cli_pushes_the_rendered_dashboards_and_never_prints_the_token(grafana):
    env = {**os.environ, "GRAFANA_TOKEN": TOKEN}
    first = run_cli("push", "--grafana-url", grafana.url, "--insecure-http", "--folder", "GPU fleet", env=env)
    assert first.returncode == 0, first.stderr
    second = run_cli("push", "--grafana-url", grafana.url, "--insecure-http", "--folder", "GPU fleet", env=env)
    assert second.returncode == 0, second.stderr
    assert sorted(d["title"] for d in grafana.dashboards.values()) == [
        "GPU Baselines", "GPU Executive Overview", "GPU Fleet Overview", "GPU Health", "GPU Jobs", "GPU On-call",
        "GPU Performance"]
    assert {d["version"] for d in grafana.dashboards.values()} == {2}
    assert "pushed 7 dashboards into folder 'GPU fleet'" in second.stdout
    failed = run_cli("push", "--grafana-url", f"http://127.0.0.1:{free_port()}", "--insecure-http", env=env)
    assert failed.returncode == 1 and "cannot connect" in failed.stderr
    for result in (first, second, failed):
        assert TOKEN not in result.stdout + result.stderr


def test_cli_without_token_is_a_usage_error(grafana):
    env = {k: v for k, v in os.environ.items() if k != "GRAFANA_TOKEN"}
    result = run_cli("push", "--grafana-url", grafana.url, "--insecure-http", env=env)
    assert result.returncode == 2 and "GRAFANA_TOKEN is not set" in result.stderr
    assert not grafana.requests


def test_cli_refuses_to_send_the_token_over_plain_http(grafana):
    """The fake Grafana listens on http://: without --insecure-http nothing is sent, one line says why."""
    env = {**os.environ, "GRAFANA_TOKEN": TOKEN}
    result = run_cli("push", "--grafana-url", grafana.url, env=env)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: refusing to send the Grafana token over plain http:// to {grafana.url}: use https://, "
        "or pass --insecure-http to accept that risk"]
    assert not grafana.requests and TOKEN not in result.stdout + result.stderr
    bare = run_cli("push", "--grafana-url", "grafana.example.com:3000", env=env)
    assert bare.returncode == 2 and "is not an http(s) URL" in bare.stderr
    allowed = run_cli("push", "--grafana-url", grafana.url, "--insecure-http", env=env)
    assert allowed.returncode == 0, allowed.stderr
    assert grafana.requests
