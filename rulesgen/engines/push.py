"""Import dashboards into Grafana over its HTTP API, idempotently by uid.

Calls exactly: GET /api/folders, POST /api/folders (when the folder is missing) and
POST /api/dashboards/db with overwrite=true per dashboard. The token goes only into the
Authorization header: no message built here contains it.
"""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

import requests


class PushError(Exception):
    """A push failure explained for a human (never containing the token)."""


def check_url(url: str, insecure_http: bool = False) -> None:
    """https:// only, unless insecure_http: over plain http:// the bearer token crosses the network in
    clear text (loopback included: one rule, no guessing which hosts are safe)."""
    scheme = urlsplit(url).scheme.lower()
    if scheme == "https" or (scheme == "http" and insecure_http):
        return
    if scheme == "http":
        raise PushError(f"refusing to send the Grafana token over plain http:// to {url}: use https://, "
                        f"or pass --insecure-http to accept that risk")
    raise PushError(f"--grafana-url {url!r} is not an http(s) URL (e.g. https://grafana.example.com)")


@dataclass(frozen=True)
class Pushed:
    uid: str
    title: str
    url: str
    version: int | None


class GrafanaClient:
    def __init__(self, base_url: str, token: str, timeout: float, session: requests.Session | None = None):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.session = session or requests.Session()
        self.session.headers.update({"Authorization": f"Bearer {token}", "Accept": "application/json"})

    def call(self, method: str, path: str, body: dict | None = None):
        what = f"{method} {path}"
        try:
            response = self.session.request(method, self.base_url + path, json=body, timeout=self.timeout)
        except requests.Timeout:
            raise PushError(f"{what}: Grafana at {self.base_url} did not answer within {self.timeout:g}s") from None
        except requests.ConnectionError:
            raise PushError(f"{what}: cannot connect to Grafana at {self.base_url} (connection refused or host "
                            f"unreachable)") from None
        except requests.RequestException as exc:
            raise PushError(f"{what}: request failed: {type(exc).__name__}") from None
        if response.status_code in (401, 403):
            raise PushError(f"{what}: authentication failed (HTTP {response.status_code}: {_message(response)}); "
                            f"check that GRAFANA_TOKEN is a valid service-account token with Editor rights")
        if not response.ok:
            raise PushError(f"{what}: HTTP {response.status_code}: {_message(response)}")
        try:
            return response.json()
        except ValueError:
            raise PushError(f"{what}: HTTP {response.status_code} but the answer is not JSON") from None


def _message(response: requests.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text.strip()[:200] or response.reason or "no message"
    return str(data.get("message", data)) if isinstance(data, dict) else str(data)[:200]


def ensure_folder(client: GrafanaClient, title: str, uid: str) -> str:
    """The uid of the folder called title, created with uid when no folder has that title."""
    for folder in client.call("GET", "/api/folders") or []:
        if folder.get("title") == title or folder.get("uid") == uid:
            return folder["uid"]
    return client.call("POST", "/api/folders", {"uid": uid, "title": title})["uid"]


def push(base_url: str, token: str, dashboards: list[dict], folder: str, folder_uid: str, timeout: float = 10.0,
         session: requests.Session | None = None) -> list[Pushed]:
    """Create or overwrite each dashboard (matched by uid) in the folder; returns what Grafana stored."""
    if not token:
        raise PushError("GRAFANA_TOKEN is not set: create a Grafana service-account token and export it")
    client = GrafanaClient(base_url, token, timeout, session)
    target = ensure_folder(client, folder, folder_uid)
    pushed = []
    for dashboard in dashboards:
        body = {"dashboard": {**dashboard, "id": None}, "folderUid": target, "overwrite": True,
                "message": "rulesgen push"}
        answer = client.call("POST", "/api/dashboards/db", body)
        pushed.append(Pushed(uid=answer.get("uid", dashboard.get("uid", "")), title=dashboard.get("title", ""),
                             url=answer.get("url", ""), version=answer.get("version")))
    return pushed
