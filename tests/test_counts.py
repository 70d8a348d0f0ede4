"""What the rules that count things count, replayed by promtool on the rendered rules live on each test's inputs.

- xid_same_gpu_across_jobs counts the jobs an application-class XID hit on one GPU: a job is its namespace and
  its workload (the pod name through workload_regex), so two jobs of one team, or two teams' jobs of one name,
  are two jobs, and a job's pods rescheduled under new names are one. One GPU, XID 31 under a first job at 30m
  and under a second at 3h20m (NVSentinel's RepeatedXID31OnSameGPU: two jobs in 24 hours).
- fleet_capacity_degraded counts the GPUs with a firing drain alert: a GPU is its node and its index, so GPU 0
  of three nodes is three GPUs, and a GPU with two drain alerts is one.
- gpu_lost and exporter_down judge each node by its own exporter, found by the instance it is scraped at: GPUs
  gone silent on several nodes whose exporters still answer are each lost, several exporters down each down.
- straggler compares a busy GPU's SM clock with the median of its job's GPUs of its model, or, without a job,
  of its node's: each of the two paths finds a slow GPU, and GPUs of two models in one job or node (an A100 at
  its 1410 MHz beside H100s at 1980 MHz) are no stragglers.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import live_rules

GPU = 'job="dcgm-exporter", Hostname="n1", gpu="2", UUID="GPU-2", modelName="NVIDIA H100 80GB HBM3"'
STEPS = 240  # 4 hours at 1m


def _job(namespace: str, pod: str, start: int, end: int, xid_at: int) -> list[dict]:
    """A pod on the GPU from minute start to end (its series exist only then), XID 31 at xid_at in the exporter's
    windowed count (5 minutes at 1)."""
    labels = f'{GPU}, namespace="{namespace}", pod="{pod}"'
    before, after = f"_x{start} " if start else "", f" _x{STEPS - end}"
    count = f"{before}0x{xid_at - start - 1} 1x4 0x{end - xid_at - 5}{after}"
    return [{"series": f"DCGM_FI_DEV_GPU_TEMP{{{labels}}}", "values": f"{before}60x{end - start - 1}{after}"},
            {"series": f'DCGM_EXP_XID_ERRORS_COUNT{{{labels}, xid="31"}}', "values": count}]


@pytest.fixture(scope="module")
def rule_files(tmp_path_factory) -> list[str]:
    """The single-server rule files the counts live in, in their rendered order."""
    return live_rules.bundled_rule_files(tmp_path_factory.mktemp("counts"), ("recording.yaml", "health.yaml", "efficiency.yaml", "fleet.yaml"))


def _replay(promtool: str, rule_files: list[str], tmp_path: Path, series: list[dict], checks: list[dict]) -> None:
    live_rules.promtool_expr_test(promtool, rule_files, tmp_path, "1m", series, checks)


@pytest.mark.parametrize("first,second,fires", [
    (("ml", "resnet-worker-2"), ("speech", "whisper-worker-0"), True),  # two teams, two jobs
    (("ml", "resnet-worker-2"), ("ml", "bert-worker-1"), True),  # one team's two jobs
    (("team-a", "train-worker-2"), ("team-b", "train-worker-0"), True),  # two teams' jobs of one name
    (("ml", "resnet-worker-2"), ("ml", "resnet-worker-5"), False),  # one job, its ranks rescheduled from a checkpoint
], ids=["two-teams", "one-team", "one-name", "one-job-rescheduled"])
def test_a_repeated_xid_counts_the_jobs_it_hit(rule_files, promtool, tmp_path, first, second, fires):
    series = _job(*first, 0, 90, 30) + _job(*second, 100, STEPS, 200)
    alert = 'ALERTS{alertname="GPUXIDSameGPUAcrossJobs", alertstate="firing"}'
    checks = [{"expr": f"count({alert}) or vector(0)", "eval_time": "210m",
               "exp_samples": [{"labels": "{}", "value": 1 if fires else 0}]},
              {"expr": f"count({alert}) or vector(0)", "eval_time": "190m",  # before the second XID: one job
               "exp_samples": [{"labels": "{}", "value": 0}]}]
    _replay(promtool, rule_files, tmp_path, series, checks)


def _draining(cluster_gpus: int, draining: list[tuple[str, str, str]]) -> list[dict]:
    """A cluster of 4-GPU nodes (gpu:dcgm_reporting:timestamp of each GPU) and firing drain alerts, each
    (failure mode, node, gpu), for an hour."""
    series = [{"series": f'gpu:dcgm_reporting:timestamp{{cluster="c1", Hostname="n{k // 4}", gpu="{k % 4}", '
                         f'UUID="GPU-{k}", modelName="NVIDIA H100 80GB HBM3"}}', "values": "0+60x60"}
              for k in range(cluster_gpus)]
    series += [{"series": f'ALERTS{{alertname="X", alertstate="firing", action="drain", severity="critical", '
                          f'failure_mode="{mode}", cluster="c1", Hostname="{node}", gpu="{gpu}"}}', "values": "1x60"}
               for mode, node, gpu in draining]
    return series


@pytest.mark.parametrize("draining,fires", [
    ([("gpu_lost", f"n{k}", "0") for k in range(3)], True),  # GPU 0 of three nodes: three GPUs, 3/16
    ([("gpu_lost", "n0", str(k)) for k in range(3)], True),  # three GPUs of one node
    ([("gpu_lost", "n0", "0"), ("ecc_uncorrectable", "n0", "0"), ("gpu_lost", "n1", "1")], False),  # two GPUs
], ids=["one-index-three-nodes", "three-gpus-one-node", "two-alerts-one-gpu"])
def test_capacity_counts_each_draining_gpu_once(rule_files, promtool, tmp_path, draining, fires):
    """Sixteen GPUs; three draining are the cluster's minimum (min_gpus 3) and over a tenth of it (fraction 0.1)."""
    alert = 'ALERTS{alertname="GPUFleetCapacityDegraded", alertstate="firing"}'
    checks = [{"expr": f"count({alert}) or vector(0)", "eval_time": "30m",
               "exp_samples": [{"labels": "{}", "value": 1 if fires else 0}]}]
    _replay(promtool, rule_files, tmp_path, _draining(16, draining), checks)


def test_each_exporters_xid_series_gives_the_code(rule_files, promtool, tmp_path):
    """An XID reaches the alerts with its code as the label xid, whichever series the exporter sends: the windowed
    DCGM_EXP_XID_ERRORS_COUNT (>= 3.4), the counter DCGM_EXP_XID_ERRORS_TOTAL that increases (>= 4.8.3), or one
    born at its first event on a GPU that reported before. XID 119 at 11m on GPUs 0, 1 and 2 of one node."""
    def gpu(k: int) -> str:
        return f'job="dcgm-exporter", Hostname="n1", gpu="{k}", UUID="GPU-{k}", modelName="NVIDIA H100 80GB HBM3"'
    series = [{"series": f"DCGM_FI_DEV_GPU_TEMP{{{gpu(k)}}}", "values": "60x25"} for k in range(3)]
    series += [{"series": f"DCGM_EXP_XID_ERRORS_COUNT{{{gpu(0)}}}", "values": "0x25"},
               {"series": f'DCGM_EXP_XID_ERRORS_COUNT{{{gpu(0)}, xid="119"}}', "values": "0x10 1x4 0x10"},
               {"series": f'DCGM_EXP_XID_ERRORS_TOTAL{{{gpu(1)}, xid="119"}}', "values": "1x10 2x14"},
               {"series": f'DCGM_EXP_XID_ERRORS_TOTAL{{{gpu(2)}, xid="119"}}', "values": "_x11 1x13"}]
    checks = [{"expr": "count by (gpu, xid) (gpu:dcgm_xid:recent)", "eval_time": "13m",
               "exp_samples": [{"labels": f'{{gpu="{k}", xid="119"}}', "value": 1} for k in range(3)]}]
    _replay(promtool, rule_files, tmp_path, series, checks)


H100, A100 = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"


def _busy(host: str, gpu: int, model: str, mhz: int, pod: str = "") -> list[dict]:
    """A busy GPU (GPU_UTIL 100%) at a steady SM clock for 30 minutes, in pod `pod` of namespace ml if given."""
    labels = f'job="dcgm-exporter", Hostname="{host}", gpu="{gpu}", UUID="GPU-{host}-{gpu}", modelName="{model}"'
    labels += f', namespace="ml", pod="{pod}"' if pod else ""
    return [{"series": f"DCGM_FI_DEV_{name}{{{labels}}}", "values": f"{value}x30"}
            for name, value in (("GPU_TEMP", 60), ("GPU_UTIL", 100), ("SM_CLOCK", mhz))]


def test_a_straggler_is_slow_among_its_own_models_peers(rule_files, promtool, tmp_path):
    """Four places, each GPU steady for 30 minutes: job `train`, five H100s on five nodes (so no node has peers),
    the one on j4 at 1400 MHz; node m0, eight H100s without a job, GPU 7 at 1400 MHz; job `mixed`, five H100s and
    four A100s at their own full clocks on nine nodes; node x0, five H100s and four A100s without a job. The two
    slow GPUs are stragglers, by their job's and by their node's peers; nothing of the mixed job or node is."""
    series = [s for k in range(5) for s in _busy(f"j{k}", 0, H100, 1400 if k == 4 else 1980, f"train-worker-{k}")]
    series += [s for k in range(8) for s in _busy("m0", k, H100, 1400 if k == 7 else 1980)]
    series += [s for k in range(9) for s in _busy(f"y{k}", 0, H100 if k < 5 else A100, 1980 if k < 5 else 1410,
                                                  f"mixed-worker-{k}")]
    series += [s for k in range(9) for s in _busy("x0", k, H100 if k < 5 else A100, 1980 if k < 5 else 1410)]
    alert = 'ALERTS{alertname="GPUStraggler", alertstate="firing"}'
    checks = [{"expr": f"count by (Hostname, gpu) ({alert})", "eval_time": "25m",
               "exp_samples": [{"labels": '{Hostname="j4", gpu="0"}', "value": 1},
                               {"labels": '{Hostname="m0", gpu="7"}', "value": 1}]}]
    _replay(promtool, rule_files, tmp_path, series, checks)


def test_each_node_is_judged_by_its_own_exporter(rule_files, promtool, tmp_path):
    """Seven nodes of two GPUs, each scraped at its own instance; at 10m GPU 1 of n0-n2 stops reporting, every GPU
    of n3 and n4 stops while their exporters keep answering, and the exporters of n5 and n6 go down. Each lost GPU
    is lost (and stays so past the 3 hours its last report is remembered for), each exporter down is down: a
    node's exporter found by the instance it is scraped at, never another node's."""
    series = []
    for k in range(7):
        series.append({"series": f'up{{job="dcgm-exporter", instance="10.0.0.{k}:9400"}}',
                       "values": "1x10 0x230" if k >= 5 else "1x240"})
        for gpu in (0, 1):
            labels = (f'job="dcgm-exporter", instance="10.0.0.{k}:9400", Hostname="n{k}", gpu="{gpu}", '
                      f'UUID="GPU-{k}-{gpu}", modelName="{H100}"')
            silent = k >= 3 or gpu == 1
            series += [{"series": f"DCGM_FI_DEV_{name}{{{labels}}}", "values": f"{value}x{10 if silent else 240}"}
                       for name, value in (("GPU_TEMP", 60), ("POWER_USAGE", 300))]
    lost = [{"labels": f'{{Hostname="n{k}", gpu="{gpu}"}}', "value": 1} for k in range(5) for gpu in (0, 1)
            if k >= 3 or gpu == 1]
    down = [{"labels": f'{{Hostname="n{k}"}}', "value": 1} for k in (5, 6)]
    firing = 'count by (Hostname{}) (ALERTS{{alertname="{}", alertstate="firing"}})'
    checks = [{"expr": firing.format(", gpu", "GPULost"), "eval_time": at, "exp_samples": lost} for at in ("25m", "230m")]
    checks.append({"expr": firing.format("", "GPUExporterDown"), "eval_time": "25m", "exp_samples": down})
    _replay(promtool, rule_files, tmp_path, series, checks)
