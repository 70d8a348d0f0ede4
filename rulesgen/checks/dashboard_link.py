"""dashboard-link: every link leads somewhere among the dashboards given (judged together, as `rulesgen lint
dashboards/*.json` gives them): a dashboard link's tags select one of them, a data or panel link to /d/UID names
one of their uids and sets only variables it declares, its macros are ones Grafana fills (Grafana docs, "Data
link variables"). Links out of Grafana (runbooks) are not followed. A contract check: a foreign dashboard may
link to dashboards not given."""
import re
from urllib.parse import parse_qsl, urlsplit

from .base import DASHBOARD, Check
from .dashboard_view import LINK_MACROS, Dashboard


def run(d: Dashboard):
    board = d.board
    for link in d.data.get("links", []) or []:
        if isinstance(link, dict) and link.get("type") == "dashboards" and not set(link.get("tags") or []) <= board.tags:
            yield d.hit(f"dashboard link {link.get('title')!r}: no dashboard given has the tags {link.get('tags')}",
                        key=r'"links":')
    for p in d.data_panels:
        for link in d.links(p):
            url = str(link.get("url", ""))
            what = f"link {link.get('title')!r}"
            bad = [m for m in re.findall(r"\$\{__[^}]*\}", url + str(link.get("title", ""))) if not LINK_MACROS.fullmatch(m)]
            if bad:
                yield d.hit(f"{what}: Grafana fills no {', '.join(bad)}", p)
            parts = urlsplit(url)
            m = re.fullmatch(r"(?:/[\w.-]+)*/d/([\w-]+)(?:/[\w.-]*)?", parts.path)
            if parts.netloc or not m:
                continue
            target = board.by_uid.get(m.group(1))
            if target is None:
                yield d.hit(f"{what}: no dashboard given has uid {m.group(1)}", p)
                continue
            query = parts.query.replace("${__url_time_range}", "")
            for key, _ in parse_qsl(query):
                if key.startswith("var-") and key[4:] not in target.variable_names:
                    yield d.hit(f"{what}: {target.data.get('title')!r} has no variable {key[4:]}", p)


CHECK = Check("dashboard-link", "error", True, "a dashboard or data link whose target (tag, dashboard uid, variable) "
              "is not among the dashboards given, or that reads a macro Grafana does not fill", DASHBOARD, run)
