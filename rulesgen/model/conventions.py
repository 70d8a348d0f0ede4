"""Every generated name lives here: alerts, groups, files, recording rules, uids and URLs."""
from __future__ import annotations

import hashlib

ALERT_PREFIX = "GPU"
GROUP_PREFIX = "rulesgen"

# Dashboards each failure-mode group links to (issue: dashboards by failure mode).
GROUP_DASHBOARD = {"health": "gpu-health", "efficiency": "gpu-performance", "baselines": "gpu-baselines",
                   "fleet": "gpu-fleet-overview", "jobs": "gpu-jobs"}


def camel(identifier: str) -> str:
    words = identifier.split("_")
    special = {"ecc": "ECC", "xid": "XID", "pcie": "PCIe", "nvlink": "NVLink", "gpu": "GPU", "fb": "FB"}
    return "".join(special.get(w, w.capitalize()) for w in words)


def alert_name(failure_mode_id: str, severity: str, severities_in_mode: int) -> str:
    """One alert per failure mode and severity: GPUEccUncorrectable, GPUXidErrorCritical ..."""
    base = camel(failure_mode_id)
    if base.startswith(ALERT_PREFIX):
        base = base[len(ALERT_PREFIX):]
    name = f"{ALERT_PREFIX}{base}"
    return name + severity.capitalize() if severities_in_mode > 1 else name


# Default keep_firing_for of the identity alerts (model.IDENTITY_GROUPS; rulesgen.yaml keep_firing_for): a
# fault's alert outlives a gap in its series this short (a scrape or two failing, a driver label renamed:
# Prometheus marks the series stale at once) without a RESOLVED and a second page. 5m is Prometheus'
# lookback delta. A longer darkness is held by what explains it: while the GPU's gpu_lost or the node's
# exporter_down is pending or firing, the alert holds (builders/rules.py _held_while_silenced).
IDENTITY_HOLD_SECONDS = 300
# Template variable an identity alert's summary and description name the job with ($job.namespace,
# $job.pod): the labels of the workload series on the GPU, queried when the annotation is expanded.
JOB_VARIABLE = "$job"


def recording_group(level: str) -> str:
    return f"{GROUP_PREFIX}-{level}-signals"


def alert_group(group: str) -> str:
    return f"{GROUP_PREFIX}-{group}-alerts"


# Baseline recording rules and their alert share one group: rules inside a group run in order, so
# the alert reads this evaluation's values whatever order an evaluator gives groups.
BASELINE_GROUP = f"{GROUP_PREFIX}-baselines"
BASELINE_HISTORY_GROUP = f"{GROUP_PREFIX}-baseline-history"
BASELINE_STATISTICS_GROUP = f"{GROUP_PREFIX}-baseline-statistics"


def rule_file(kind: str) -> str:
    return f"alerts/prometheus/{kind}.yaml"


def dashboard_file(dashboard_id: str) -> str:
    return f"dashboards/{dashboard_id}.json"


LIMIT_PREFIX = "model:dcgm_limit_"


def limit_record(key: str) -> str:
    """A model's limit, one series per cluster and modelName, e.g. model:dcgm_limit_memory_max_temp_c:value."""
    return f"{LIMIT_PREFIX}{key}:value"


GPU_LIMIT_PREFIX = "gpu:dcgm_limit_"


def gpu_limit_record(key: str) -> str:
    """A GPU's effective limit, one series per GPU: its own DCGM report where exported, else its model's
    table value, else the default, e.g. gpu:dcgm_limit_gpu_max_operating_temp_c:value."""
    return f"{GPU_LIMIT_PREFIX}{key}:value"


# GPUs reporting per cluster and modelName: the series the model limits are written on.
MODEL_GPUS = "model:dcgm_gpus:count"


# Baseline records (rulesgen/builders/baselines.py): one series per GPU and `signal` label.
BASELINE_SHORT = "30m"  # the "now" of a baseline: a median (or rate) over this window
BASELINE_VALUE = f"gpu:dcgm_baseline:value_{BASELINE_SHORT}"
# Signals that read the peers' medians (baselines.yaml reads_peers) are recorded after them, under
# their own name: one record name, one rule (promtool's duplicate-rules check).
BASELINE_VALUE_VS_NODE = f"gpu:dcgm_baseline_vs_node:value_{BASELINE_SHORT}"
BASELINE_HOURLY = f"{BASELINE_VALUE}_hourly"
# Daily sums of the hourly points (count, sum, sum of squares), written at midnight UTC.
BASELINE_DAILY_COUNT = "gpu:dcgm_baseline_daily:count"
BASELINE_DAILY_SUM = "gpu:dcgm_baseline_daily:sum"
BASELINE_DAILY_SUMSQ = "gpu:dcgm_baseline_daily:sumsq"
# The history baseline over `baselines.window`, from the daily sums; present only once the GPU has
# `baselines.min_history` of history (cold GPUs have none).
BASELINE_HISTORY_MEAN = "gpu:dcgm_baseline_history:mean"
BASELINE_HISTORY_STDDEV = "gpu:dcgm_baseline_history:stddev"
# Each GPU's z against each baseline (label `baseline`), where it passes the release threshold, its minimum
# deviation and its same-load guard: the baseline alert enters above the entry thresholds and holds above these.
BASELINE_DEVIATION_Z = "gpu:dcgm_baseline_deviation:z"


# Event series (catalog/signals.yaml, "history"): one sample per event, nothing in between. With the daily
# sums they are the only recorded series a rule may read over a day or more (rulesgen lint, dense-long-window).
EVENT_OPERATION = "onset"
# Hourly sums (the SLOs' counts, builders/slos.py): written by a group evaluated once an hour.
HOURLY_SUM_OPERATION = "sum_1h"


def is_sparse(record: str) -> bool:
    """A recorded series with a few samples a day: an event series, an hourly sum or the baselines' daily sums."""
    return record.endswith((":" + EVENT_OPERATION, ":" + HOURLY_SUM_OPERATION)) or record in (BASELINE_DAILY_COUNT, BASELINE_DAILY_SUM, BASELINE_DAILY_SUMSQ)


def baseline_peers(level: str, statistic: str) -> str:
    """node:/fleet:dcgm_baseline_peers:median|mad: robust statistics of busy same-model peers."""
    return f"{level}:dcgm_baseline_peers:{statistic}"


BASELINE_RECORDS = frozenset({BASELINE_VALUE, BASELINE_VALUE_VS_NODE, BASELINE_HOURLY, BASELINE_DAILY_COUNT, BASELINE_DAILY_SUM,
                              BASELINE_DAILY_SUMSQ, BASELINE_HISTORY_MEAN, BASELINE_HISTORY_STDDEV, BASELINE_DEVIATION_Z, *(baseline_peers(level, stat)
                              for level in ("node", "fleet") for stat in ("median", "mad"))})


def stable_uid(dashboard_id: str) -> str:
    return "rg-" + hashlib.sha256(dashboard_id.encode()).hexdigest()[:12]


def folder_uid(folder: str) -> str:
    """The Grafana folder's uid, shared by `rulesgen push` and the provisioning provider."""
    return stable_uid("folder:" + folder)


def runbook_slug(failure_mode_id: str) -> str:
    """The name of a failure mode's runbook page: its id with hyphens (the dashboards' firing table makes the
    same from the failure_mode label with label_replace)."""
    return failure_mode_id.replace("_", "-")


def runbook_page_url(base: str, slug: str) -> str:
    return base.rstrip("/") + "/" + slug + ".md"


def runbook_url(base: str, failure_mode_id: str) -> str:
    return runbook_page_url(base, runbook_slug(failure_mode_id))


def runbook_path(failure_mode_id: str) -> str:
    """The runbook's file in the outputs (runbook_url's target when urls.runbook_base is where they are published)."""
    return "runbooks/" + runbook_url("", failure_mode_id).lstrip("/")


def failure_mode_row_id(index_in_group: int) -> int:
    """Panel id of a failure mode's row in its group's dashboard (index = position among the
    catalog's failure modes of that group, from 0). Its first panel is row id + 1: the panel an
    alert's dashboard_url opens with viewPanel."""
    return 100 * (index_in_group + 1)


def failure_mode_panel_id(index_in_group: int) -> int:
    return failure_mode_row_id(index_in_group) + 1


# The dashboards' variable that selects the cluster, whatever label (settings.cluster_label) carries it.
CLUSTER_VARIABLE = "cluster"


def dashboard_url(base: str, group: str, variables: tuple[tuple[str, str], ...] = (), panel_id: int | None = None) -> str:
    """The group's dashboard, at the panel; each (variable, label) of `variables` sets that dashboard variable
    from the alert's label."""
    dash = GROUP_DASHBOARD[group]
    url = f"{base.rstrip('/')}/d/{stable_uid(dash)}/{dash}"
    params = []
    if panel_id is not None:
        params.append(f"viewPanel={panel_id}")
    params += [f"var-{variable}={{{{ $labels.{label} }}}}" for variable, label in variables]
    return url + ("?" + "&".join(params) if params else "")
