"""Issue 37 item 4, human words: every rendered panel and row title is a few catalog words, never PromQL
(on main a GPU Health title was 513 characters of a mangled query), every unit is one of Grafana's unit ids
(three panels carried `rotmhz`, which Grafana has no id for), every panel has a description from the catalog
that never repeats its own query.

No Grafana runs here: the unit list is Grafana's published one (below, with its source), and the title
rules are the shapes PromQL text has. Each check is also run on the titles and units main rendered, to show
that it fails on them.
"""
import copy
import re

import pytest

from dashboard_views import (
    DASHBOARD_IDS, all_panels, bundled_plan, dashboards_of, data_panels, one_line, units)
from rulesgen.builders.dashboards.prose import ENGINE_WORDS

# Grafana's unit ids: getCategories() in grafana/grafana packages/grafana-data/src/valueFormats/categories.ts,
# read at commit ed1aac226b3b (Grafana 11); grafana/dashboard-linter's panel-units-rule enumerates the same file.
# Kept here rather than imported from rulesgen/model/grafana_units.py, so that the test does not trust the code.
GRAFANA_UNIT_IDS = set("""
none string short percent percentunit humidity dB hex0x hex sci locale pixel accMS2 accFS2 accG degree radian grad
arcmin arcsec areaM2 areaF2 areaMI2 flops mflops gflops tflops pflops eflops zflops yflops ppm conppb conngm3
conngNm3 con\u03bcgm3 con\u03bcgNm3 conmgm3 conmgNm3 congm3 congNm3 conmgdL conmmolL currencyUSD currencyGBP
currencyEUR currencyJPY currencyRUB currencyUAH currencyBRL currencyDKK currencyISK currencyNOK currencySEK
currencyCZK currencyCHF currencyPLN currencyBTC currencymBTC currency\u03bcBTC currencyZAR currencyINR currencyKRW
currencyIDR currencyPHP currencyVND currencyTRY bytes decbytes bits decbits kbytes deckbytes mbytes decmbytes gbytes
decgbytes tbytes dectbytes pbytes decpbytes pps binBps Bps binbps bps KiBs Kibits KBs Kbits MiBs Mibits MBs Mbits
GiBs Gibits GBs Gbits TiBs Tibits TBs Tbits PiBs Pibits PBs Pbits dateTimeAsIso dateTimeAsIsoNoDateIfToday
dateTimeAsUS dateTimeAsUSNoDateIfToday dateTimeAsLocal dateTimeAsLocalNoDateIfToday dateTimeAsSystem
dateTimeFromNow watt kwatt megwatt gwatt mwatt Wm2 voltamp kvoltamp voltampreact kvoltampreact watth watthperkg
kwatth kwattm amph kamph mamph joule ev amp kamp mamp volt kvolt mvolt dBm ohm kohm Mohm farad \u00b5farad nfarad
pfarad ffarad henry mhenry \u00b5henry lumens flowgpm flowcms flowcfs flowcfm litreh flowlpm flowmlpm lux forceNm
forcekNm forceN forcekN Hs KHs MHs GHs THs PHs EHs massmg massg masslb masskg masst lengthmm lengthin lengthft
lengthm lengthkm lengthmi pressurembar pressurebar pressurekbar pressurepa pressurehpa pressurekpa pressurehg
pressurepsi radbq radci radgy radrad radsv radmsv radusv radrem radexpckg radr radsvh radmsvh radusvh rotrpm rothz
rotrads rotdegs celsius fahrenheit kelvin hertz ns \u00b5s ms s m h d dtdurationms dtdurations dthms dtdhms
timeticks clockms clocks cps ops reqps rps wps iops eps mps recps rowsps cpm opm reqpm rpm wpm epm mpm recpm rowspm
velocityms velocitykmh velocitymph velocityknot mlitre litre m3 Nm3 dm3 gallons bool bool_yes_no bool_on_off
""".split())

# What PromQL looks like in a title: braces, a matcher, a range, a name touching its "(", a grouping clause, a
# series name. Written here, apart from rulesgen/model/words.py, for the same reason as the unit list.
PROMQL_IN_TITLE = [r"[{}]", r"=~|!~|!=|==", r"\[[^\]]*\]", r"\b\w+\(", r"\b(by|without|on|ignoring)\s*\(", r"__name__",
                   r"\b(gpu|node|job|fleet|model|rank):\w+:\w+", r"\bDCGM_(FI|EXP)_\w+"]
TITLE_MAX = 80
# Titles main rendered (issue 37): the first is the start of the 513-character one.
MAINS_TITLES = [
    'Max by (cluster, Hostname) (label replace(timestamp({ name =~"DCGM FI DEV GPU TEMP|DCGM FI DEV GPU TEMP CELSIUS", '
    'job=~"(nvidia-)?dcgm-exporter"}), "Hostname", "$1", "hostname", "(.+)"))',
    "Telemetry blind spot: Max over time(gpu fields count[1h]) - gpu fields count",
    "Floor(gpu fabric health mask max / 16) % 4",
]


def title_problems(title: str) -> list[str]:
    problems = [f"{len(title)} characters"] if len(title) > TITLE_MAX else []
    problems += [f"PromQL {m.group(0)!r}" for p in PROMQL_IN_TITLE for m in [re.search(p, title)] if m]
    return problems + (["empty"] if not title.strip() else [])


def dashboard_title_problems(dashboard) -> list[str]:
    return [f"panel {p.get('id')} {p.get('title')!r}: {', '.join(found)}" for p in all_panels(dashboard)
            for found in [title_problems(p.get("title", ""))] if found]


def unit_problems(dashboard) -> list[str]:
    return [f"panel {p['id']} {p['title']!r}: unit {u!r} is not a Grafana unit id" for p in data_panels(dashboard)
            for u in units(p) or [None] if u not in GRAFANA_UNIT_IDS]


@pytest.fixture(scope="module")
def dashboards():
    return dashboards_of(bundled_plan())


@pytest.mark.parametrize("dashboard_id", DASHBOARD_IDS)
def test_every_title_is_words_not_promql(dashboards, dashboard_id):
    d = dashboards[f"dashboards/{dashboard_id}.json"]
    assert len(list(all_panels(d))) > 5
    assert dashboard_title_problems(d) == []


@pytest.mark.parametrize("title", MAINS_TITLES)
def test_the_title_check_rejects_mains_titles(dashboards, title):
    bad = copy.deepcopy(dashboards["dashboards/gpu-health.json"])
    data_panels(bad)[3]["title"] = title
    assert len(dashboard_title_problems(bad)) == 1
    assert title_problems("x" * 81) == ["81 characters"] and title_problems("GPU temperature (median over 4m)") == []


@pytest.mark.parametrize("dashboard_id", DASHBOARD_IDS)
def test_every_unit_is_a_grafana_unit_id(dashboards, dashboard_id):
    assert unit_problems(dashboards[f"dashboards/{dashboard_id}.json"]) == []


def test_the_unit_check_rejects_rotmhz_and_a_missing_unit(dashboards):
    bad = copy.deepcopy(dashboards["dashboards/gpu-jobs.json"])
    panels = data_panels(bad)
    panels[1]["fieldConfig"]["defaults"]["unit"] = "rotmhz"
    panels[2]["fieldConfig"]["defaults"].pop("unit")
    assert [p.split(": ")[1] for p in unit_problems(bad)] == ["unit 'rotmhz' is not a Grafana unit id",
                                                               "unit None is not a Grafana unit id"]


def test_mhz_signals_are_drawn_in_hertz():
    """Grafana has no MHz unit: the SM clock panels draw hertz, their queries multiplied by 1e6 (hertz takes SI
    prefixes: 1410 MHz shows as 1.41 GHz)."""
    clocks = [p for d in dashboards_of(bundled_plan()).values() for p in data_panels(d) if "SM clock" in p["title"]
              and "vs" not in p["title"]]
    assert len(clocks) >= 3
    for p in clocks:
        assert units(p) == ["hertz"], p["title"]
        assert all(t["expr"].endswith(") * 1000000") for t in p["targets"]), p["title"]


def catalog_titles(p) -> set[str]:
    c = p.catalog
    return ({s.panel_title for s in c.signals} | {t.panel_title for fm in c.failure_modes for t in fm.thresholds}
            | {w[0] for w in ENGINE_WORDS.values()})


def test_failure_mode_panels_are_titled_with_catalog_words():
    """A panel read from a failure mode's alerts is titled with a signal's or a threshold's catalog title, at
    most with the alert's function and window ("(median over 4m)", ": changes in 10m") or its severity after it."""
    p = bundled_plan()
    titles = catalog_titles(p)
    checked = 0
    for path in ("dashboards/gpu-health.json", "dashboards/gpu-performance.json"):
        d = dashboards_of(p)[path]
        for row in (r for r in d["panels"] if r["type"] == "row" and r["id"] >= 100):
            for panel in row.get("panels") or [q for q in d["panels"] if row["id"] < q.get("id", 0) < row["id"] + 100]:
                title = panel["title"].removeprefix(f"{row['title']}: ")
                base = re.sub(r" \((median|avg|min|max|last) over \w+\)$|: \w+ in \w+$| \((critical|warning|info) alert\)$",
                              "", title)
                assert base in titles, (path, panel["id"], panel["title"])
                checked += 1
    assert checked >= 50


def test_every_panel_describes_itself_in_catalog_words_not_its_query(dashboards):
    for path, d in sorted(dashboards.items()):
        for p in data_panels(d):
            desc = p.get("description", "")
            assert desc.startswith("**Shows:**") and "**Normal:**" in desc and "**Do:**" in desc, (path, p["id"])
            for t in p.get("targets", []):
                assert one_line(t["expr"]) not in one_line(desc), (path, p["id"], p["title"])
    ecc = next(p for p in data_panels(dashboards["dashboards/gpu-health.json"]) if p["title"].endswith("Correctable ECC errors per minute"))
    description = next(s.description for s in bundled_plan().catalog.signals if s.record == "gpu:dcgm_ecc_sbe:rate_per_minute")
    assert ecc["description"].startswith(f"**Shows:** {one_line(description)}")


def test_the_bundled_catalog_titles_every_signal_and_baseline():
    """A catalog without titles still renders (the name in words); the bundled one gives every title."""
    c = bundled_plan().catalog
    assert [s.record for s in c.signals if not s.title] == [] and [b.signal for b in c.baselines if not b.title] == []


def test_hand_made_panels_are_titled_by_their_catalog_texts(dashboards):
    """The panels drawn by code take their titles from catalog/dashboards.yaml texts (a row's after its failure
    mode's title); the bundled file titles every one."""
    p = bundled_plan()
    titles = {q["title"] for d in dashboards.values() for q in all_panels(d)}
    for text in p.catalog.panel_texts:
        assert text.title, text.id
        if "[[" not in text.title and text.id != "rows.job_alerts":  # that one: a job mode without a row of its own
            assert any(t == text.title or t.endswith(f": {text.title}") for t in titles), (text.id, text.title)
    assert {f"{s.title} per GPU" for s in p.catalog.signals if s.record in p.catalog.named_all("job_gpu_panels")} <= titles
    assert {f"{b.title}: now, history and peers" for b in p.catalog.baselines} <= titles
