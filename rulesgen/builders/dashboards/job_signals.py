"""Panels for the training jobs' own metrics (issue 14, part 3) on the GPU Jobs dashboard.

Two call sites: jobs.job_panels() puts header_panels() next to the table of the selected pods' GPUs
(the hardware alerts of those GPUs, then loss and step time per rank), and rows.failure_mode_panels()
draws the rows catalog/dashboards.yaml gives to a builder of ROWS (rows.ghost_loss ...) and hands the
other failure modes that read job metrics (catalog `job_metrics:`) to mode_panels(). Every query reads
recording rules (rulesgen/load/jobmetrics.py, catalog/signals.yaml) or ALERTS, filtered by the dashboard's
cluster, namespace and pod variables; a job that exports no job metrics shows empty panels, never an error.
"""
from __future__ import annotations

from grafanalib.core import Panel

from ...model.catalog import FailureMode
from ...promql import text as promql
from .context import Reads
from .panels import drawn, runbook_link, target, threshold_steps, time_series
from .prose import fm_text, panel_text, panel_title

HARDWARE_TITLE = "Hardware alerts on the selected pods' GPUs"


def _rank_series(ctx, record: str, *extra: str) -> str:
    """A per-rank record of the selected pods."""
    matchers = ", ".join(x for x in (ctx.variables.matchers(("cluster", "namespace", "workload", "pod")), *extra) if x)
    return f"{record}{{{matchers}}}"


def _of_selected_jobs(ctx, expr: str) -> str:
    """A per-job record, kept for the jobs of the selected pods (a job has no pod label)."""
    s = ctx.settings
    job = promql.by((s.cluster_label, s.namespace_label, "workload"))
    pods = ctx.variables.matchers(("cluster", "host", "gpu", "namespace", "workload", "pod"))
    return f"{expr}\n  and on ({job}) {ctx.named('training_job')}{{{pods}}}"


def _job_series(ctx, record: str, *extra: str) -> str:
    matchers = ", ".join(x for x in (ctx.variables.matchers(("cluster", "namespace", "workload")), *extra) if x)
    return _of_selected_jobs(ctx, f"{record}{{{matchers}}}")


def _gpu_series(ctx, record: str, *extra: str) -> str:
    matchers = ", ".join(x for x in (ctx.variables.matchers(("cluster", "host", "gpu", "namespace", "workload", "pod")), *extra) if x)
    return f"{record}{{{matchers}}}"


def _legends(ctx) -> tuple[str, str, str]:
    s = ctx.settings
    rank = f"{{{{{s.pod_label}}}}} rank {{{{rank}}}}"
    job = f"{{{{{s.namespace_label}}}}}/{{{{workload}}}}"
    gpu = f"{{{{{s.host_label}}}}}/{{{{gpu}}}}"
    return rank, job, gpu


def _names(ctx) -> tuple[str, str]:
    jm = ctx.settings.job_metrics
    return jm.loss, jm.step_duration


def _hardware_alerts_panel(ctx, reads: Reads):
    """The firing alerts of reads.alerts_of (the hardware faults a ghost loss is suspected after)."""
    s = ctx.settings
    _, _, gpu = _legends(ctx)
    gpus = ctx.variables.matchers(("cluster", "host", "gpu"))
    held = ctx.workload_info(f'{s.pod_label}!=""')
    modes = "|".join(m.id for m in reads.alerts_of)
    by = promql.by(("alertname", s.host_label, "gpu"))
    # Hardware alerts carry the GPU's identity only: the selected pods are those holding their GPUs.
    expr = (f'count by ({by}) (\n  ALERTS{{alertstate="firing", failure_mode=~"{modes or "none"}", {gpus}}}\n'
            f'    * on ({ctx.gpu_id}) group_left () {held}\n)')
    return time_series(panel_title(ctx, "jobs.hardware_alerts", HARDWARE_TITLE), panel_text(ctx, "jobs.hardware_alerts"),
        "short", [target(expr, f"{{{{alertname}}}} {gpu}")], runbook_link(ctx, reads.fm), stacked=True)


def _loss_per_rank_panel(ctx, fm: FailureMode):
    rank, job, _ = _legends(ctx)
    loss, _ = _names(ctx)
    return time_series(panel_title(ctx, "jobs.loss_per_rank", "Training loss per rank"),
                       panel_text(ctx, "jobs.loss_per_rank", loss=loss),
        ctx.unit(ctx.named("rank_loss")), [target(_rank_series(ctx, ctx.named("rank_loss")), rank),
                  target(_job_series(ctx, ctx.named("job_loss_smoothed")), f"{job} smoothed", "B")],
        runbook_link(ctx, fm), dashed_refs=("B",))


def _step_per_rank_panel(ctx, fm: FailureMode):
    rank, job, _ = _legends(ctx)
    _, step = _names(ctx)
    return time_series(panel_title(ctx, "jobs.step_per_rank", "Step time per rank"),
                       panel_text(ctx, "jobs.step_per_rank", step=step),
        ctx.unit(ctx.named("rank_step")), [target(_rank_series(ctx, ctx.named("rank_step")), rank),
              target(_job_series(ctx, ctx.named("job_step_median")), f"{job} median", "B")],
        runbook_link(ctx, fm), dashed_refs=("B",))


def header_panels(ctx) -> list[Panel]:
    """Beside the table of the selected pods' GPUs: their hardware alerts, then loss and step time per rank
    (none with job_metrics.enabled: false, when the records they read are not rendered)."""
    if not ctx.settings.job_metrics.enabled:
        return []
    return [*drawn(ctx, "jobs.hardware_alerts", _hardware_alerts_panel),
            *drawn(ctx, "jobs.loss_per_rank", lambda c, reads: _loss_per_rank_panel(c, reads.fm)),
            *drawn(ctx, "jobs.step_per_rank", lambda c, reads: _step_per_rank_panel(c, reads.fm))]


def _main(ctx, fm: FailureMode, title, text_id, values, unit, targets, steps=None, dashed=()):
    """A row's main comparison: the panel the alert's dashboard_url opens, titled with the failure mode; its
    description the catalog's text text_id (dashboards.yaml texts:) filled with values."""
    act, url = fm_text(ctx, fm)
    return time_series(f"{fm.title}: {panel_title(ctx, text_id, title)}", panel_text(ctx, text_id, url, runbook_do=act, **values),
                       unit, targets,
                       runbook_link(ctx, fm), steps, dashed)


def mode_panels(ctx, fm: FailureMode) -> list[Panel]:
    """The row of a failure mode that reads job metrics and has no hand-made row (ROWS): its firing alerts."""
    _, _, gpu = _legends(ctx)
    return [_main(ctx, fm, "alerts", "rows.job_alerts", {"summary": fm.summary}, "short",
                  [target(f'ALERTS{{alertstate="firing", failure_mode="{fm.id}"}}', gpu)])]


def _ghost_loss_row(ctx, reads: Reads) -> list[Panel]:
    _, job, gpu = _legends(ctx)
    window = reads.value("look_back") / 3600
    return [
        _main(ctx, reads.fm, "minutes from the hardware alert to the loss problem", "rows.ghost_loss",
              {"look_back_hours": promql.format_number(window), "record": ctx.named("ghost_loss_minutes")},
              ctx.unit(ctx.named("ghost_loss_minutes")),
              [target(_gpu_series(ctx, ctx.named("ghost_loss_minutes")),
                      f"{job} {gpu} {{{{hardware_failure_mode}}}} then {{{{symptom}}}}")]),
        _hardware_alerts_panel(ctx, reads),
        _loss_per_rank_panel(ctx, reads.fm),
    ]


def _loss_divergence_row(ctx, reads: Reads) -> list[Panel]:
    _, job, _ = _legends(ctx)
    ratio = reads.value("diverging_above")
    return [
        _main(ctx, reads.fm, "smoothed loss over its recent best", "rows.loss_divergence",
              {"record": ctx.named("job_loss_vs_best"), "diverging_above": promql.format_number(ratio)},
              ctx.unit(ctx.named("job_loss_vs_best")),
              [target(_job_series(ctx, ctx.named("job_loss_vs_best")), job)],
            threshold_steps(">", ratio, "warning")),
        _loss_per_rank_panel(ctx, reads.fm),
    ]


def _loss_plateau_row(ctx, reads: Reads) -> list[Panel]:
    _, job, _ = _legends(ctx)
    low = reads.value("learning_above")
    earlier = f"{int(reads.value('earlier_by'))}s"
    return [
        _main(ctx, reads.fm, "improvement on the best before the window", "rows.loss_plateau",
              {"record": ctx.named("job_loss_improvement"), "learning_above": promql.format_number(low)},
              ctx.unit(ctx.named("job_loss_improvement")),
            [target(_job_series(ctx, ctx.named("job_loss_improvement")), job),
             target(_of_selected_jobs(ctx, f"{ctx.named('job_loss_improvement')}{{{ctx.variables.matchers(('cluster', 'namespace', 'workload'))}}}"
                                           f" offset {earlier}"), f"{job} one window earlier", "B")],
            threshold_steps("<", low, "info"), ("B",)),
        _loss_per_rank_panel(ctx, reads.fm),
    ]


def _loss_not_finite_row(ctx, reads: Reads) -> list[Panel]:
    _, job, _ = _legends(ctx)
    by = promql.by((ctx.settings.cluster_label, ctx.settings.namespace_label, "workload"))
    return [
        _main(ctx, reads.fm, "ranks with a finite loss vs ranks stepping", "rows.loss_not_finite", {}, "short",
            [target(f"count by ({by}) ({_rank_series(ctx, ctx.named('rank_loss'))})", f"{job} finite loss"),
             target(f"count by ({by}) ({_rank_series(ctx, ctx.named('rank_step'))})", f"{job} stepping",
                    "B")], dashed=("B",)),
        _loss_per_rank_panel(ctx, reads.fm),
    ]


def _step_time_straggler_row(ctx, reads: Reads) -> list[Panel]:
    rank, job, _ = _legends(ctx)
    ratio, cv = reads.value("straggler_above"), reads.value("spread_above")
    act, url = fm_text(ctx, reads.fm)
    return [
        _main(ctx, reads.fm, "each rank's step time over its job's median", "rows.step_time_straggler",
              {"record": ctx.named("rank_step_vs_job"), "straggler_above": promql.format_number(ratio)},
              ctx.unit(ctx.named("rank_step_vs_job")),
              [target(_rank_series(ctx, ctx.named("rank_step_vs_job")), rank)],
            threshold_steps(">", ratio, "warning")),
        time_series(panel_title(ctx, "rows.step_time_straggler.spread", "StdDev / Mean of step time across ranks"), panel_text(
            ctx, "rows.step_time_straggler.spread", url, record=ctx.named("job_step_cv"),
            spread_above=promql.format_number(cv), runbook_do=act), ctx.unit(ctx.named("job_step_cv")),
            [target(_job_series(ctx, ctx.named("job_step_cv")), job)], runbook_link(ctx, reads.fm),
            threshold_steps(">", cv, "warning")),
        _step_per_rank_panel(ctx, reads.fm),
    ]


# The hand-made rows of failure modes that read job metrics (panel_specs.PANELS; catalog/dashboards.yaml says whose).
ROWS = {"rows.ghost_loss": _ghost_loss_row, "rows.loss_divergence": _loss_divergence_row,
        "rows.loss_plateau": _loss_plateau_row, "rows.loss_not_finite": _loss_not_finite_row,
        "rows.step_time_straggler": _step_time_straggler_row}
