"""Exporter dialects: every scenario replayed as dcgm-exporter 3.3-4.9 and 15-60 s scrapes record it
(rulesgen/load/dialects.py), with the default config and unchanged expectations.

The unit tests check the transforms themselves; the engine tests replay the matrix cells that fit
`make test`'s budget through the real promtool 3.5 (`rulesgen replay --dialect` runs any other cell)."""

import pytest

from conftest import ROOT, promtool_jobs, replay_cases, replay_fixture, run_cli
from rulesgen import artifacts as arts
from rulesgen.load import dialects
from rulesgen.builders.promtool_tests import scenario_test
from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.errors import RulesgenError
from rulesgen.promql.text import series_labels
from rulesgen.render.yamltext import dump
from rulesgen.load.scenarios import STALE, Scenario, expand, load_scenario

SCENARIOS = ROOT / "fixtures" / "scenarios"

# (scenario, dialect): the cells CI replays (`make test-dialects-all`). Each axis meets the scenarios that
# exercise it: renamed fields and units (utilisation ratio, Hz clocks, byte framebuffer), the lower-case
# host label (per-node comparisons, a node leaving), each XID and clock-event input (the onset counter on a
# GPU at its power cap, whose SM clock the baseline must not read as its own; the windowed count of a GPU
# touching its thermal limit for a minute), and 15/60 s scrapes
# on the rules with the shortest windows (and a loss that turns +Inf, then NaN, seen twice at 15 s).
# `make test` replays QUICK, one cell per dialect (the normal-load cells run in CI), to stay within its
# budget; the others are marked slow (make test-dialects-all).
ALL_CELLS = [
    ("misleading-utilization", "exporter-4.9"),
    ("gpu-idle-allocated", "exporter-4.9"),
    ("fb-memory-pressure", "exporter-4.9"),
    ("straggler", "exporter-4.9"),
    ("normal-node-leaves-fleet", "exporter-4.9"),
    ("thermal-throttling-cooling-failure", "exporter-4.9"),
    ("power-anomaly-hw-brake", "exporter-4.9"),
    ("xid-119-gsp-timeout", "exporter-4.9"),
    ("telemetry-frozen-hostengine-hang", "exporter-4.9"),
    ("nvlink-fabric-gb200-nvl72", "exporter-4.9"),
    ("baseline-normal-job-change", "exporter-4.9"),
    ("gpu-lost-xid79", "xid-count"),
    ("xid-31-mmu-fault", "xid-count"),
    ("xid-119-gsp-timeout", "xid-total"),
    ("power-anomaly-hw-brake", "clock-count"),
    ("normal-thermal-touch", "clock-count"),
    ("nvlink-errors-crc-replay", "nvlink-entity+hostname"),
    ("ecc-uncorrectable-dbe", "exporter-4.8.2"),
    ("xid-31-mmu-fault", "exporter-4.8.2"),
    ("loss-nan-fp16-overflow", "exporter-4.8.2"),
    ("normal-inference-bursty", "exporter-4.8.2"),
    ("dataloader-starvation", "prometheus-default"),
    ("pcie-errors-replay", "prometheus-default"),
    ("gpu-lost-series-stop", "prometheus-default"),
    ("normal-exporter-restart-counter-reset", "prometheus-default"),
]
QUICK = [
    ("thermal-throttling-cooling-failure", "exporter-4.9"),
    ("gpu-lost-xid79", "xid-count"),
    ("xid-119-gsp-timeout", "xid-total"),
    ("power-anomaly-hw-brake", "clock-count"),
    ("nvlink-errors-crc-replay", "nvlink-entity+hostname"),
    ("ecc-uncorrectable-dbe", "exporter-4.8.2"),
    ("dataloader-starvation", "prometheus-default"),
]
MATRIX = replay_cases(ALL_CELLS, QUICK, ids=lambda cell: "@".join(cell))


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(bundled_catalog_dir())


def _scenario(stem, catalog) -> Scenario:
    return load_scenario(SCENARIOS / f"{stem}.yaml", [fm.id for fm in catalog.failure_modes],
                         {n for m in catalog.metrics for n in m.names})


def _only(s: Scenario, name_prefix: str, **labels) -> list[tuple[str, list]]:
    return [(series, expand(values)) for series, values in s.series
            if series.startswith(name_prefix + "{") and all(series_labels(series).get(k) == v for k, v in labels.items())]


# --- transforms (fast) ---------------------------------------------------------------------------

def test_quick_cells_are_cells_and_meet_every_dialect():
    assert set(QUICK) <= set(ALL_CELLS)
    assert {d for _, d in QUICK} == {d for _, d in ALL_CELLS}


def test_encode_round_trips_promtool_notation():
    values = [1.0, 1.0, 1.0, None, None, STALE, 2.5, 0.97, 0.97, None]
    assert dialects.encode(values) == "1x2 _x2 stale 2.5 0.97x1 _"
    assert expand(dialects.encode(values)) == values
    inf = float("inf")
    assert dialects.encode([2.5, 2.5, inf, inf, -inf, -inf]) == "2.5x1 Inf Inf -Inf -Inf"  # promtool has no Infx1


def test_unknown_dialect_is_an_error_with_a_suggestion():
    with pytest.raises(RulesgenError) as exc:
        dialects.parse_dialect("hostnme+scrape-60s")
    (d,) = exc.value.diagnostics
    assert d.code == "unknown-dialect" and "'hostnme'" in d.message and "did you mean 'hostname'" in d.message


def test_presets_are_made_of_known_axes():
    for name, spec in dialects.PRESETS.items():
        d = dialects.parse_dialect(name)
        assert d.name == name
        assert all(part in dialects.AXES for part in filter(None, spec.split("+")))


def test_hostname_dialect_renames_the_label_not_the_expectations(catalog):
    s = _scenario("gpu-lost-series-stop", catalog)
    t = dialects.apply(s, dialects.parse_dialect("hostname"), catalog)
    assert t.expect == s.expect
    dcgm = [series for series, _ in t.series if series.startswith("DCGM_")]
    assert dcgm and all('hostname="' in x and 'Hostname="' not in x for x in dcgm)


def test_names_49_renames_fields_and_converts_units(catalog):
    s = _scenario("normal-steady-training", catalog)  # a normal scenario: every field its nodes export
    t = dialects.apply(s, dialects.parse_dialect("names-4.9"), catalog)
    names = {series.split("{")[0] for series, _ in t.series}
    assert "DCGM_FI_DEV_GPU_UTIL" not in names and "DCGM_FI_DEV_GPU_UTIL_RATIO" in names
    assert "DCGM_FI_DEV_SM_CLOCK_HERTZ" in names and "DCGM_FI_DEV_FB_USED_BYTES" in names
    (old_series, old), *_ = _only(s, "DCGM_FI_DEV_GPU_UTIL")
    new = dict(_only(t, "DCGM_FI_DEV_GPU_UTIL_RATIO"))[old_series.replace("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL_RATIO", 1)]
    pairs = [(a, b) for a, b in zip(old, new) if isinstance(a, float)]
    assert pairs and all(abs(b - a / 100) < 1e-9 for a, b in pairs)
    clock_old = next(v for series, v in _only(s, "DCGM_FI_DEV_SM_CLOCK"))
    clock_new = next(v for series, v in _only(t, "DCGM_FI_DEV_SM_CLOCK_HERTZ"))
    assert [v * 1e6 for v in clock_old if isinstance(v, float)][:5] == [v for v in clock_new if isinstance(v, float)][:5]


def test_every_49_alias_with_a_unit_change_carries_its_scale(catalog):
    changed = {m.name: a for m in catalog.metrics for a in m.aliases if a.since == "4.9.0" and a.unit != m.unit}
    assert {"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"} <= set(changed)
    assert changed["DCGM_FI_DEV_SM_CLOCK"].scale == 1e-6 and changed["DCGM_FI_DEV_GPU_UTIL"].scale == 100
    assert changed["DCGM_FI_DEV_FB_USED"].scale == 1 / 1048576


def test_scrape_intervals_resample_without_moving_time(catalog):
    s = _scenario("dataloader-starvation", catalog)
    n = len(expand(s.series[0][1]))
    slow = dialects.apply(s, dialects.parse_dialect("scrape-60s"), catalog)
    fast = dialects.apply(s, dialects.parse_dialect("scrape-15s"), catalog)
    assert (slow.interval, fast.interval) == (60, 15) and s.interval == 30
    assert len(expand(slow.series[0][1])) == (n + 1) // 2
    assert expand(fast.series[0][1])[:4] == [expand(s.series[0][1])[0]] * 2 + [expand(s.series[0][1])[1]] * 2
    assert slow.duration == fast.duration == s.duration and slow.expect == s.expect


def test_xid_total_counts_from_the_first_event_and_count_is_windowed(catalog):
    s = _scenario("xid-119-gsp-timeout", catalog)
    codes = {series_labels(x)["err_code"] for x, _ in s.series if x.startswith("DCGM_FI_DEV_XID_ERRORS{")} - {"0"}
    assert codes, "the fixture must carry a non-zero XID"
    total = dialects.apply(s, dialects.parse_dialect("xid-total"), catalog)
    assert not any(x.startswith("DCGM_FI_DEV_XID_ERRORS{") for x, _ in total.series)
    born = [(x, expand(v)) for x, v in total.series if x.startswith("DCGM_EXP_XID_ERRORS_TOTAL{")]
    assert born and {series_labels(x)["xid"] for x, _ in born} == codes
    assert all(v[0] is None for _, v in born), "absent until the first event"
    count = dialects.apply(s, dialects.parse_dialect("xid-count"), catalog)
    per_xid = [expand(v) for x, v in count.series if x.startswith("DCGM_EXP_XID_ERRORS_COUNT{") and "xid=" in x]
    zeros = [x for x, _ in count.series if x.startswith("DCGM_EXP_XID_ERRORS_COUNT{") and "xid=" not in x]
    assert per_xid and zeros
    window = dialects.EVENT_WINDOW // s.interval
    assert all(sum(isinstance(v, float) for v in values) <= window * 4 for values in per_xid), "a windowed count ends"


def test_clock_count_turns_the_bitmask_into_clock_event_series(catalog):
    s = _scenario("power-anomaly-hw-brake", catalog)
    t = dialects.apply(s, dialects.parse_dialect("clock-total"), catalog)
    events = {series_labels(x)["clock_event"] for x, _ in t.series if x.startswith("DCGM_EXP_CLOCK_EVENTS_TOTAL{")}
    assert "hw_power_brake" in events
    assert not any(x.startswith("DCGM_FI_DEV_CLOCKS_EVENT_REASONS{") for x, _ in t.series)


def test_clock_count_counts_the_samples_a_reason_was_set_in_and_total_its_onsets(catalog):
    """dcgm-exporter's DCGM_EXP_CLOCK_EVENTS_COUNT counts every value DCGM sampled (each collect interval, 30 s
    by default) within its window with the bit set, so a reason that stays set keeps counting;
    DCGM_EXP_CLOCK_EVENTS_TOTAL counts only the onsets (a bit newly set)."""
    s = _scenario("power-anomaly-hw-brake", catalog)
    brake = 128
    (gauge, bits), *_ = [(x, v) for x, v in _only(s, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS")
                         if any(isinstance(b, float) and int(b) & brake for b in v)]
    uuid = series_labels(gauge)["UUID"]
    held = [isinstance(b, float) and bool(int(b) & brake) for b in bits]
    assert max(sum(held[i:i + 3]) for i in range(len(held))) == 3, "the fixture holds the brake over samples"
    count = dialects.apply(s, dialects.parse_dialect("clock-count"), catalog)
    (counted,) = [expand(v) for x, v in count.series if x.startswith("DCGM_EXP_CLOCK_EVENTS_COUNT{")
                  and series_labels(x).get("clock_event") == "hw_power_brake" and series_labels(x)["UUID"] == uuid]
    window = dialects.EVENT_WINDOW // s.interval
    per_sample = s.interval / dialects.DCGM_UPDATE
    for i, value in enumerate(counted):
        expected = sum(held[max(0, i - window + 1):i + 1]) * per_sample
        assert (value or 0.0) == (float(max(1, round(expected))) if expected else 0.0), i
    total = dialects.apply(s, dialects.parse_dialect("clock-total"), catalog)
    (onsets,) = [expand(v) for x, v in total.series if x.startswith("DCGM_EXP_CLOCK_EVENTS_TOTAL{")
                 and series_labels(x).get("clock_event") == "hw_power_brake" and series_labels(x)["UUID"] == uuid]
    rises = sum(1 for i in range(1, len(held)) if held[i] and not held[i - 1])
    assert max(v for v in onsets if isinstance(v, float)) == rises


def test_a_scenario_naming_an_unknown_field_is_an_error(tmp_path, catalog):
    src = (SCENARIOS / "ecc-uncorrectable-preexisting.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(src.replace("DCGM_FI_DEV_GPU_TEMP{", "DCGM_FI_DEV_GPU_TEMPERATURE{", 1))
    with pytest.raises(RulesgenError) as exc:
        _scenario_path(bad, catalog)
    d = exc.value.diagnostics[0]
    assert d.code == "unknown-metric" and d.path.endswith("bad.yaml") and d.line > 1
    assert "DCGM_FI_DEV_GPU_TEMPERATURE" in d.message


def _scenario_path(path, catalog):
    return load_scenario(path, [fm.id for fm in catalog.failure_modes], {n for m in catalog.metrics for n in m.names})


def test_an_alias_in_another_unit_needs_a_scale(tmp_path, minimal_catalog):
    text = (minimal_catalog / "metrics.yaml").read_text()
    (minimal_catalog / "metrics.yaml").write_text(text.replace(
        "    default_enabled: true\n",
        "    default_enabled: true\n    aliases:\n      - name: DCGM_FI_DEV_GPU_TEMP_MILLI\n        unit: mC\n", 1))
    result = run_cli("render", "--catalog", str(minimal_catalog), "--out", str(tmp_path / "out"))
    assert result.returncode == 1
    assert "metrics.yaml:" in result.stderr and "error[alias-scale-missing]" in result.stderr
    assert not (tmp_path / "out" / "alerts").exists()


def test_replay_cli_rejects_an_unknown_dialect():
    result = run_cli("replay", "fixtures/scenarios/ecc-uncorrectable-preexisting.yaml", "--dialect", "exporter-5.0")
    assert result.returncode == 1
    assert "error[unknown-dialect]" in result.stderr and "exporter-5.0" in result.stderr


# --- the matrix on promtool 3.5 ----------------------------------------------------------------

@replay_fixture
def matrix_results(request):
    """promtool on the dialect cells, several to a run (tests/batches.py)."""
    catalog, promtool = load_catalog(bundled_catalog_dir()), request.getfixturevalue("promtool")
    out = request.getfixturevalue("tmp_path_factory").mktemp("dialects")
    plan = arts.plan(bundled_catalog_dir(), ROOT / "rulesgen.yaml", None)
    arts.write_all(out, [a for a in plan.artifacts if a.path.startswith("alerts/")])
    files = [f for f in plan.rules.files if f.path not in arts.DASHBOARD_ONLY]
    order = [g.name for f in files for g in f.groups]

    def jobs_of(cells: list[str]) -> dict:
        paths = []
        for cell in cells:
            stem, _, dialect = cell.partition("@")
            s = dialects.apply(_scenario(stem, catalog), dialects.parse_dialect(dialect), catalog)
            paths.append(out / f"{cell}.yaml")
            paths[-1].write_text(dump(scenario_test(s, [str(out / f.path) for f in files], order)))
        return promtool_jobs(promtool, paths)
    return jobs_of


@pytest.mark.engines
@pytest.mark.parametrize("stem,dialect", MATRIX)
def test_scenario_passes_in_dialect(matrix_results, stem, dialect):
    rc, output = matrix_results[f"{stem}@{dialect}"]
    assert rc == 0, (f"{stem} as {dialect} failed (run `rulesgen replay fixtures/scenarios/{stem}.yaml "
                     f"--dialect {dialect}` for details):\n{output[-3000:]}")


def test_a_series_that_ends_within_a_coarser_slot_is_marked_stale_at_the_next_scrape():
    """A 30 s series seen once (value, then stale): at a 60 s scrape the value is seen, and the next
    scrape finds the series gone and marks it stale (not five minutes of lookback on one sample)."""
    S = dialects.STALE
    assert dialects._resample([None, 10, S, None, None, None], 30, 60) == [10, S, None]
    assert dialects._resample([10, S, None, None], 30, 60) == [10, S]
    assert dialects._resample([10, 10, 10, S, None, None], 30, 60) == [10, 10, S]
    assert dialects._resample([None, None, 10, 10], 30, 60) == [None, 10]
