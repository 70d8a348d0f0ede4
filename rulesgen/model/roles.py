"""The catalog names rulesgen's own code reads, by role: the recording rules the generated rules and the
hand-made dashboard panels query, and the exporter metrics the dashboards, plots and replay dialects use.

Data only, like panel_specs.py. The catalog declares each role's name (catalog/signals.yaml `roles:` for
records, catalog/metrics.yaml `roles:` for metrics) and the loader checks it (rulesgen/catalog/roles.py):
a declared name nothing defines is an error on its line; a role the catalog leaves out takes its default
below, and if that is not defined while the code needs it (required, a declared hand-made panel that
reads it, a busy-only baseline) the error is on the line that should define it (`signals:` or `metrics:`).
Code asks `Catalog.named(role)`, never spells the name: a catalog that renames a record or a metric
everywhere, its role included, renders consistently.
"""
from __future__ import annotations

from dataclasses import dataclass

RECORD, METRIC = "record", "metric"


@dataclass(frozen=True)
class RoleSpec:
    """kind: RECORD (a signals.yaml record) or METRIC (a metrics.yaml metric, by its main name).
    default: the name(s) of a catalog that does not declare the role (for `many`, those it defines).
    required: every catalog needs it; else only what reads it (panels: panel_specs.PanelSpec.records).
    many: a list (in the order the code draws it), else one name."""
    kind: str
    about: str
    default: tuple[str, ...]
    required: bool = False
    many: bool = False


ROLES = {
    # --- records: catalog/signals.yaml roles: ---------------------------------------------------------
    "reporting": RoleSpec(RECORD, "one series per reporting GPU: the model limits are written on it, "
                          "dashboards keep the selected GPUs with it and list their GPU variables from it", ("gpu:dcgm_reporting:timestamp",), required=True),
    "workload": RoleSpec(RECORD, "the pod on each GPU: alerts and dashboards join it (failure modes' default "
                         "workload_from), the dashboards list their job variables from it", ("gpu:dcgm_workload:info",), required=True),
    "fleet_gpus": RoleSpec(RECORD, "GPUs reporting per cluster and model: the fleet dashboard's GPU count (drawn when "
                           "defined)", ("fleet:dcgm_gpus:count",)),
    "util_per_gpu": RoleSpec(RECORD, "GPU_UTIL per GPU: the baselines' busy filter, GPU-hours, cost, the jobs table",
                         ("gpu:dcgm_gpu_util:ratio",)),
    "sm_active_per_gpu": RoleSpec(RECORD, "SM active per GPU: the spread across a job's ranks", ("gpu:dcgm_sm_active:ratio",)),
    "fleet_sm_active": RoleSpec(RECORD, "SM active per cluster and model", ("fleet:dcgm_sm_active:avg",)),
    "fleet_gpu_util": RoleSpec(RECORD, "GPU_UTIL per cluster and model", ("fleet:dcgm_gpu_util:avg",)),
    "tensor_active_per_gpu": RoleSpec(RECORD, "tensor pipe active per GPU: the executive dashboard's honest "
                                      "utilisation", ("gpu:dcgm_tensor_active:ratio",)),
    "node_gpus": RoleSpec(RECORD, "GPUs reporting per node: the on-call dashboard's nodes by health",
                          ("node:dcgm_gpus:count",)),
    "exporter_targets": RoleSpec(RECORD, "dcgm-exporter scrape targets per cluster: the on-call dashboard's exporters",
                                 ("fleet:dcgm_exporter_targets:count",)),
    "sm_clock_vs_job": RoleSpec(RECORD, "a GPU's SM clock over its job's median", ("gpu:dcgm_sm_clock_vs_job:ratio",)),
    "job_gpu_panels": RoleSpec(RECORD, "the GPU Jobs dashboard's per-GPU panels, in order", (
        "gpu:dcgm_sm_active:ratio", "gpu:dcgm_tensor_active:ratio", "gpu:dcgm_gpu_util:ratio", "gpu:dcgm_sm_clock:max",
        "gpu:dcgm_gpu_temp:max", "gpu:dcgm_power_usage:max", "gpu:dcgm_fb_used:ratio"), many=True),
    "drain_onset": RoleSpec(RECORD, "one sample when a drain episode starts on a GPU, labelled with the job on it then: "
                            "the on-call table names the job a drain alert hit", ("gpu:dcgm_drain_alert:onset",)),
    "training_job": RoleSpec(RECORD, "the training job on each GPU", ("gpu:training_job:info",)),
    "rank_loss": RoleSpec(RECORD, "each rank's finite training loss", ("rank:training_loss:finite",)),
    "job_loss_smoothed": RoleSpec(RECORD, "the job's loss, median of its ranks over 15 minutes",
                                  ("job:training_loss:median_15m",)),
    "rank_step": RoleSpec(RECORD, "each rank's step time", ("rank:training_step:seconds",)),
    "job_step_median": RoleSpec(RECORD, "the job's median step time", ("job:training_step:median",)),
    "ghost_loss_minutes": RoleSpec(RECORD, "minutes from a hardware alert to a loss problem", ("gpu:ghost_loss:minutes",)),
    "job_loss_vs_best": RoleSpec(RECORD, "the smoothed loss over its recent best", ("job:training_loss_vs_best:ratio",)),
    "job_loss_improvement": RoleSpec(RECORD, "the loss's improvement on its best before the window",
                                     ("job:training_loss_improvement:recent",)),
    "rank_step_vs_job": RoleSpec(RECORD, "a rank's step time over its job's median", ("rank:training_step_vs_job:ratio",)),
    "job_step_cv": RoleSpec(RECORD, "stddev / mean of a job's step times across ranks", ("job:training_step:cv",)),
    # --- metrics: catalog/metrics.yaml roles: ---------------------------------------------------------
    "plot_context": RoleSpec(METRIC, "`replay --plot`: drawn after a scenario's failure modes' own metrics", (
        "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_UTIL"), many=True),
    "xid_gauge": RoleSpec(METRIC, "the XID gauge the xid-* replay dialects rewrite", ("DCGM_FI_DEV_XID_ERRORS",)),
    "xid_count": RoleSpec(METRIC, "the windowed XID count of the xid-count dialect", ("DCGM_EXP_XID_ERRORS_COUNT",)),
    "xid_total": RoleSpec(METRIC, "the XID counter of the xid-total dialect", ("DCGM_EXP_XID_ERRORS_TOTAL",)),
    "clock_gauge": RoleSpec(METRIC, "the clock-event bitmask the clock-* replay dialects rewrite",
                            ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS",)),
    "clock_count": RoleSpec(METRIC, "the windowed clock-event count of the clock-count dialect",
                            ("DCGM_EXP_CLOCK_EVENTS_COUNT",)),
    "clock_total": RoleSpec(METRIC, "the clock-event counter of the clock-total dialect", ("DCGM_EXP_CLOCK_EVENTS_TOTAL",)),
    "driver_version": RoleSpec(METRIC, "the driver version label field: the executive dashboard's inventory (its "
                               "names are the label's names)", ("DCGM_FI_DRIVER_VERSION",)),
    "inventory": RoleSpec(METRIC, "one series per GPU that carries the label fields: the executive dashboard's "
                          "inventory counts it", ("DCGM_FI_DEV_GPU_TEMP",)),
    "label_fields": RoleSpec(METRIC, "label-type fields the generated dcgm-exporter counters file enables",
                             ("DCGM_FI_DRIVER_VERSION",), many=True),
}
