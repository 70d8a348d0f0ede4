"""The baseline rules' arithmetic in promtool: the stddev floor (a flat history cannot make a 1 C
change infinite), the cold-start rule, and weekly seasonality. Small hand-built inputs whose
expected values are exact; the long realistic scenarios are in fixtures/scenarios/baseline-*.yaml.
The z checked is the alert's own (builders/baselines.py history_z, which the dashboards also draw)."""
from __future__ import annotations

from pathlib import Path


import live_rules
from rulesgen.builders import baselines
from rulesgen.catalog import bundled_catalog_dir
from rulesgen.load.settings import Settings
from rulesgen.load.settings_sections import BaselineSettings
from rulesgen.model import conventions

LABELS = 'job="dcgm-exporter", Hostname="node-a", gpu="0", UUID="GPU-0", modelName="NVIDIA H100 80GB HBM3"'


def render_rules(tmp_path: Path, config: str = "") -> list[str]:
    cfg = None
    if config:
        cfg = tmp_path / "rulesgen.yaml"
        cfg.write_text(config)
    return live_rules.bundled_rule_files(tmp_path, ("recording.yaml", "baselines.yaml"), cfg)


def steady(temp_values: str, n: int) -> list[dict]:
    """One busy, unconstrained GPU: temperature as given, everything else constant for n+1 samples."""
    return [
        {"series": f"DCGM_FI_DEV_GPU_TEMP{{{LABELS}}}", "values": temp_values},
        {"series": f"DCGM_FI_DEV_POWER_USAGE{{{LABELS}}}", "values": f"600x{n}"},
        {"series": f"DCGM_FI_DEV_GPU_UTIL{{{LABELS}}}", "values": f"100x{n}"},
        {"series": f"DCGM_FI_DEV_SM_CLOCK{{{LABELS}}}", "values": f"1980x{n}"},
        {"series": f"DCGM_FI_DEV_FB_USED{{{LABELS}}}", "values": f"1000x{n}"},
    ]


def promtool_test(promtool: str, tmp_path: Path, rule_files: list[str], interval: str, series: list[dict], checks: list[dict]) -> None:
    live_rules.promtool_expr_test(promtool, rule_files, tmp_path, interval, series, checks)


def one(expr: str, at: str, value: float) -> dict:
    """expr must give exactly the GPU's gpu_temp series with `value` at `at`."""
    labels = LABELS.replace('job="dcgm-exporter", ', "") + ', signal="gpu_temp"'
    return {"expr": expr, "eval_time": at, "exp_samples": [{"labels": f"{{{labels}}}", "value": value}]}


def test_flat_history_is_floored_and_a_young_gpu_is_cold(tmp_path, promtool):
    """Seven days at exactly 60 C (stddev 0), then 61 C: z = 1 C / 2 C floor = 0.5, not +Inf. After
    two days the GPU is cold: no history mean, stddev or z yet (7 days of daily points needed)."""
    rules = render_rules(tmp_path)
    gpu_temp = next(b for b in _catalog().baselines if b.signal == "gpu_temp")
    # Hourly samples: 0h..168h at 60 C, then 61 C. Daily points at midnights 0d..7d hold 1 + 7 x 24 points.
    series = steady("60x168 61x2", 170)
    cold = [{"expr": expr, "eval_time": "2d1h", "exp_samples": []} for expr in (
        baselines.history_z([gpu_temp], Settings()), f'{conventions.BASELINE_HISTORY_MEAN}{{signal="gpu_temp"}}',
        baselines.history_warm('signal="gpu_temp"', Settings(), _catalog().baseline_statistics))]
    warm = [
        one(baselines.history_z([gpu_temp], Settings()), "7d1h", 0.5),
        one(f'{conventions.BASELINE_HISTORY_MEAN}{{signal="gpu_temp"}} * 1', "7d1h", 60),  # "* 1" drops __name__
        one(f'{conventions.BASELINE_HISTORY_STDDEV}{{signal="gpu_temp"}} * 1', "7d1h", 0),
    ]
    promtool_test(promtool, tmp_path, rules, "1h", series, cold + warm)


def test_weekly_seasonality_compares_with_the_same_hour_a_week_earlier(tmp_path, promtool):
    """Hourly samples for 8 days: 60 C except 80 C at 10:00-11:00 on day 0 and day 7. Against the
    window mean the day-7 peak is ~+20 C; against the same hour one week earlier it is ~0."""
    hours = 8 * 24
    values = ["60"] * (hours + 1)
    for h in (10, 11, 7 * 24 + 10, 7 * 24 + 11):
        values[h] = "80"
    series = steady(" ".join(values), hours)
    at = f"{7 * 24 + 11}h"
    gpu_temp = next(b for b in _catalog().baselines if b.signal == "gpu_temp")
    plain = tmp_path / "plain"
    weekly = tmp_path / "weekly"
    plain.mkdir()
    weekly.mkdir()
    # Daily sums written at midnights 0d..7d hold the hourly points 0h..168h: two of them at 80 C.
    mean_7d = (2 * 80 + 167 * 60) / 169
    promtool_test(promtool, plain, render_rules(plain), "1h", series,
                  [one(baselines.history_deviation([gpu_temp], Settings())[0], at, 80 - mean_7d)])
    promtool_test(promtool, weekly, render_rules(weekly, "baselines: {seasonality: weekly}\n"), "1h", series,
                  [one(baselines.history_deviation([gpu_temp], Settings(baselines=BaselineSettings(seasonality="weekly")))[0], at, 0)])


def _catalog():
    from rulesgen.catalog import load_catalog
    return load_catalog(bundled_catalog_dir())


# Peers (issue 39, item 3): four 4-GPU nodes, twelve GPUs at whole degrees around 59.5 C and a fifth node
# (p05, one GPU: too few for a node median) or a hot node p04 whose four GPUs run ~20 C hotter.
COOL = {"p01": (57, 58, 58, 59), "p02": (59, 59, 60, 60), "p03": (60, 61, 61, 62)}


def fleet(temps: dict[str, tuple], n: int, power: dict[str, str] | None = None,
          models: dict[tuple[str, int], str] | None = None) -> list[dict]:
    """Busy GPUs at the power of their peers, H100s unless models says otherwise ((host, gpu) -> modelName);
    temps: host -> one promtool value string (or number) per GPU; power: host -> a promtool value string for its
    GPUs' power (default 430 W throughout)."""
    series = []
    for host, values in temps.items():
        for k, v in enumerate(values):
            model = (models or {}).get((host, k), "NVIDIA H100 80GB HBM3")
            labels = f'job="dcgm-exporter", Hostname="{host}", gpu="{k}", UUID="GPU-{host}-{k}", modelName="{model}"'
            series += [
                {"series": f"DCGM_FI_DEV_GPU_TEMP{{{labels}}}", "values": v if isinstance(v, str) else f"{v}x{n}"},
                {"series": f"DCGM_FI_DEV_POWER_USAGE{{{labels}}}", "values": (power or {}).get(host, f"430x{n}")},
                {"series": f"DCGM_FI_DEV_GPU_UTIL{{{labels}}}", "values": f"100x{n}"},
                {"series": f"DCGM_FI_DEV_SM_CLOCK{{{labels}}}", "values": f"1980x{n}"},
                {"series": f"DCGM_FI_DEV_FB_USED{{{labels}}}", "values": f"1000x{n}"},
            ]
    return series


def test_a_hot_node_is_left_out_of_the_peer_statistics_it_is_judged_by(tmp_path, promtool):
    """First pass over all 16: median 60, MAD 1.5 (the hot node widens it); the hot GPUs are 18-21 C from that
    median, beyond peer_outlier_z (2.5) x max(1.4826 x 1.5, 2 C floor) = 5.56 C, so the second pass is the twelve
    cool GPUs: median 59.5, MAD 1 (deviations 0.5 x6, 1.5 x4, 2.5 x2)."""
    series = fleet({**COOL, "p04": (78, 79, 80, 81)}, 60)
    stat = 'fleet:dcgm_baseline_peers:{}{{signal="gpu_temp"}} * 1'  # "* 1" drops __name__
    labels = '{modelName="NVIDIA H100 80GB HBM3", signal="gpu_temp"}'
    checks = [{"expr": stat.format("median"), "eval_time": "40m", "exp_samples": [{"labels": labels, "value": 59.5}]},
              {"expr": stat.format("mad"), "eval_time": "40m", "exp_samples": [{"labels": labels, "value": 1}]}]
    promtool_test(promtool, tmp_path, render_rules(tmp_path), "1m", series, checks)


def _p05_alerts(hot, over: str, alerts: str, value: int, tmp_path, promtool, power: dict[str, str] | None = None) -> None:
    """p05's one GPU (temperature `hot`) among the twelve cool peers for 2 hours: `over`_over_time, from 30m to
    1h50m, of how many of its GPUBaselineDeviation alerts match `alerts` (extra matchers) must be `value`."""
    series = fleet({**COOL, "p05": (hot,)}, 120, power)
    count = f'count(ALERTS{{alertname="GPUBaselineDeviation", Hostname="p05"{alerts}}}) or vector(0)'
    checks = [{"expr": f"{over}_over_time(({count})[80m:1m])", "eval_time": "110m",
               "exp_samples": [{"labels": "{}", "value": value}]}]
    promtool_test(promtool, tmp_path, render_rules(tmp_path), "1m", series, checks)


def _firing_throughout(hot: str, tmp_path, promtool, expect_firing: bool, power: dict[str, str] | None = None) -> None:
    """p05's one GPU against the twelve cool peers (median 59.5, spread at the 2 C floor): 67 C (z 3.75, above
    peer_z 3.5) for an hour, then `hot` to 2h. Checked at 1h50m: firing now, and at every minute since 30m."""
    _p05_alerts(hot, "min", ', alertstate="firing"', 1 if expect_firing else 0, tmp_path, promtool, power)


def test_a_firing_peer_alert_holds_through_a_dip_above_its_release_threshold(tmp_path, promtool):
    """66 C after the first hour: z 3.25, under peer_z (3.5) but above peer_z_release (3): one whole-degree
    sensor step down does not resolve the alert (without the hold it resolves at ~1h20m)."""
    _firing_throughout("67x59 66x60", tmp_path, promtool, expect_firing=True)


def test_a_peer_alert_resolves_when_the_gpu_returns_under_its_release_threshold(tmp_path, promtool):
    """65 C after the first hour: z 2.75, under peer_z_release (3): the hold ends, the alert resolves."""
    _firing_throughout("67x59 65x60", tmp_path, promtool, expect_firing=False)


def test_a_pause_of_the_gpu_itself_does_not_release_its_peer_alert(tmp_path, promtool):
    """Same load is one-sided: at 71 C (z 5.75) p05 pauses 10 minutes at 1h (100 W) while its peers draw 430 W.
    Its 30-minute mean power falls to 320 W (0.74 of theirs), a lighter load, which never makes a GPU hotter:
    the alert holds (a two-sided guard drops it for half an hour)."""
    pause = "430x59 100x9 430x51"
    _firing_throughout("71x120", tmp_path, promtool, expect_firing=True, power={"p05": pause})


def test_peers_at_the_same_median_but_a_lower_mean_power_do_not_make_a_gpu_hot(tmp_path, promtool):
    """The twelve peers' load switches off one minute in three (a data-starved job): median power 430 W like
    p05's steady 430 W, mean 320 W, and a temperature that follows the mean. p05 at 71 C draws 1.34 times their
    mean power: a heavier load, not a fault, so from 30m (the first whole window) to 1h50m the alert is never even
    pending (compared at the median it fires)."""
    bursty = " ".join(["430 430 100"] * 40) + " 430"
    _p05_alerts(71, "max", "", 0, tmp_path, promtool, power={host: bursty for host in COOL})


def test_peers_are_gpus_of_the_same_model(tmp_path, promtool):
    """A node of six H100s at ~60 C and two H200s at 72-73 C, all busy at the same power, beside the twelve cool
    H100s: each model is judged among its own kind (two H200s are too few for a node's or the fleet's peers), so
    nothing on the node is ever even pending from 30m to 1h50m. Compared across models, the H200s are 12 C over
    a 60 C median on the node and in the fleet, a peer z of 4 or more."""
    temps = {**COOL, "p06": (59, 60, 60, 61, 59, 60, 72, 73)}
    series = fleet(temps, 120, models={("p06", 6): "NVIDIA H200", ("p06", 7): "NVIDIA H200"})
    count = 'count(ALERTS{alertname="GPUBaselineDeviation", Hostname="p06"}) or vector(0)'
    checks = [{"expr": f"max_over_time(({count})[80m:1m])", "eval_time": "110m", "exp_samples": [{"labels": "{}", "value": 0}]}]
    promtool_test(promtool, tmp_path, render_rules(tmp_path), "1m", series, checks)


def test_a_gpu_hot_among_its_own_node_is_judged_by_its_node_peers_and_the_fleets(tmp_path, promtool):
    """One GPU of an 8-GPU node 10 C over its seven siblings (~60 C) beside the twelve cool H100s: both its node's
    peers and the fleet's see it (a deviation record of each level), and only it."""
    temps = {**COOL, "p06": (59, 60, 60, 61, 59, 60, 60, 70)}
    z = 'count by (Hostname, gpu) (gpu:dcgm_baseline_deviation:z{{baseline="{}", signal="gpu_temp"}})'
    checks = [{"expr": z.format(level), "eval_time": "40m", "exp_samples": [{"labels": '{Hostname="p06", gpu="7"}', "value": 1}]}
              for level in ("node_peers", "fleet_peers")]
    promtool_test(promtool, tmp_path, render_rules(tmp_path), "1m", fleet(temps, 60), checks)


def test_a_heavier_load_than_the_gpus_own_history_explains_its_heat(tmp_path, promtool):
    """Seven days at 60 C and 600 W (hourly samples), then 75 C on two GPUs: z = 15 C / 2 C floor = 7.5 against
    their own history. GPU 0 draws 650 W (8% above its usual power: the same load, within same_load_ratio 0.1), so
    the deviation stands; GPU 1 draws 690 W (15% above: a heavier job, hotter for a physical reason), so it has
    no deviation at all. The peers' guard has its own test above; this one is the history's."""
    series = []
    for gpu, watts in (("0", 650), ("1", 690)):
        labels = LABELS.replace('gpu="0", UUID="GPU-0"', f'gpu="{gpu}", UUID="GPU-{gpu}"')
        series += [{"series": f"DCGM_FI_DEV_GPU_TEMP{{{labels}}}", "values": "60x168 75x2"},
                   {"series": f"DCGM_FI_DEV_POWER_USAGE{{{labels}}}", "values": f"600x168 {watts}x2"},
                   {"series": f"DCGM_FI_DEV_GPU_UTIL{{{labels}}}", "values": "100x170"},
                   {"series": f"DCGM_FI_DEV_SM_CLOCK{{{labels}}}", "values": "1980x170"},
                   {"series": f"DCGM_FI_DEV_FB_USED{{{labels}}}", "values": "1000x170"}]
    labels = LABELS.replace('job="dcgm-exporter", ', "") + ', signal="gpu_temp", baseline="history"'
    check = {"expr": f'{conventions.BASELINE_DEVIATION_Z}{{baseline="history", signal="gpu_temp"}}', "eval_time": "7d1h",
             "exp_samples": [{"labels": f"{conventions.BASELINE_DEVIATION_Z}{{{labels}}}", "value": 7.5}]}
    promtool_test(promtool, tmp_path, render_rules(tmp_path), "1h", series, [check])
