"""The webhook receiver of the live test: an HTTP server thread on 127.0.0.1 that records every
notification Alertmanager sends (one POST per notification, Alertmanager's webhook JSON), with the
monotonic and wall time it arrived. A body that is not that JSON is kept as an error: the test fails
with the body."""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Notification:
    at: float            # time.monotonic() on arrival
    wall: float          # time.time() on arrival
    path: str            # /<receiver name>, as the Alertmanager config points it
    receiver: str        # what Alertmanager says
    status: str          # firing | resolved (of the group)
    alerts: tuple[dict, ...]

    def describe(self) -> str:
        parts = [f"{a['status']} {a['labels'].get('alertname')}{{failure_mode={a['labels'].get('failure_mode')},"
                 f"Hostname={a['labels'].get('Hostname')},gpu={a['labels'].get('gpu')}}}" for a in self.alerts]
        return f"{self.receiver}: " + "; ".join(parts)


class Receiver:
    """Context manager: `url` while running; `notifications` so far; `errors` (bodies it could not read)."""

    def __init__(self):
        self.notifications: list[Notification] = []
        self.errors: list[str] = []
        self.cond = threading.Condition()
        self._server: ThreadingHTTPServer | None = None

    def __enter__(self) -> "Receiver":
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.record(self.path, body)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, name="webhook", daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def record(self, path: str, body: bytes) -> None:
        now, wall = time.monotonic(), time.time()
        try:
            doc = json.loads(body)
            n = Notification(now, wall, path, doc["receiver"], doc["status"],
                             tuple({"status": a["status"], "labels": a["labels"], "annotations": a.get("annotations", {}),
                                    "startsAt": a.get("startsAt"), "endsAt": a.get("endsAt")} for a in doc["alerts"]))
        except (ValueError, KeyError, TypeError) as exc:
            with self.cond:
                self.errors.append(f"{path}: {type(exc).__name__}: {exc}: {body[:2000]!r}")
                self.cond.notify_all()
            return
        with self.cond:
            self.notifications.append(n)
            self.cond.notify_all()

    def since(self, start: float) -> list[Notification]:
        with self.cond:
            return [n for n in self.notifications if n.at >= start]
