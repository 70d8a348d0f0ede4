"""Panels for the training jobs' own metrics (issue 14, part 3) on the GPU Jobs dashboard.

Two call sites: jobs.job_panels() puts header_panels() next to the table of the selected pods' GPUs
(the hardware alerts of those GPUs, then loss and step time per rank), and rows.failure_mode_panels()
hands the rows of the failure modes that read job metrics (catalog `job_metrics:`)
to mode_panels(). Every query reads recording rules (rulesgen/jobmetrics.py, catalog/signals.yaml) or
ALERTS, filtered by the dashboard's cluster, namespace and pod variables; a job that exports no job
metrics shows empty panels, never an error.
"""
from __future__ import annotations

from grafanalib.core import Panel

from ... import promql
from ...model import FailureMode
from .panels import runbook_link, target, threshold_steps, time_series
from .prose import _fm_text, describe

# The hardware alerts a ghost loss is suspected after (gpu:hardware_alert:timestamp reads the same).
HARDWARE_MODES = ("ecc_uncorrectable", "xid_error", "thermal_throttling")


def handles(fm: FailureMode) -> bool:
    return bool(fm.job_metrics)


def _rank_series(ctx, record: str, *extra: str) -> str:
    """A per-rank record of the selected pods."""
    matchers = ", ".join(x for x in (ctx.variables.matchers(("cluster", "namespace", "pod")), *extra) if x)
    return f"{record}{{{matchers}}}"


def _of_selected_jobs(ctx, expr: str) -> str:
    """A per-job record, kept for the jobs of the selected pods (a job has no pod label)."""
    s = ctx.settings
    job = promql.by((s.cluster_label, s.namespace_label, "workload"))
    pods = ctx.variables.matchers(("cluster", "host", "gpu", "namespace", "pod"))
    return f"{expr}\n  and on ({job}) gpu:training_job:info{{{pods}}}"


def _job_series(ctx, record: str, *extra: str) -> str:
    matchers = ", ".join(x for x in (ctx.variables.matchers(("cluster", "namespace")), *extra) if x)
    return _of_selected_jobs(ctx, f"{record}{{{matchers}}}")


def _gpu_series(ctx, record: str, *extra: str) -> str:
    matchers = ", ".join(x for x in (ctx.variables.matchers(("cluster", "host", "gpu", "namespace", "pod")), *extra) if x)
    return f"{record}{{{matchers}}}"


def _legends(ctx) -> tuple[str, str, str]:
    s = ctx.settings
    rank = f"{{{{{s.pod_label}}}}} rank {{{{rank}}}}"
    job = f"{{{{{s.namespace_label}}}}}/{{{{workload}}}}"
    gpu = f"{{{{{s.host_label}}}}}/{{{{gpu}}}}"
    return rank, job, gpu


def _threshold(ctx, fm_id: str, name: str, default: float) -> float:
    return ctx.threshold(fm_id, name, default)


def _names(ctx) -> tuple[str, str]:
    jm = ctx.settings.job_metrics
    return jm.loss, jm.step_duration


def _hardware_alerts_panel(ctx, title: str, fm: FailureMode | None):
    s = ctx.settings
    _, _, gpu = _legends(ctx)
    pods = ctx.variables.matchers(("cluster", "host", "gpu", "namespace", "pod"))
    modes = "|".join(m for m in HARDWARE_MODES if ctx.mode(m))
    by = promql.by(("alertname", s.host_label, "gpu"))
    expr = (f'count by ({by}) (ALERTS{{alertstate="firing", failure_mode=~"{modes or "none"}", {pods}, '
            f'{s.pod_label}!=""}})')
    return time_series(title, describe(
        "Firing hardware alerts (uncorrectable ECC, XID, thermal throttling) on the GPUs of the selected pods, one "
        "series per alert and GPU. A loss that stalls or diverges after one of them is a suspected ghost loss.",
        "no series.", "follow the hardware alert's runbook; check the job's loss since the alert fired."),
        "short", [target(expr, f"{{{{alertname}}}} {gpu}")], runbook_link(ctx, fm), stacked=True)


def _loss_per_rank_panel(ctx, title: str, fm: FailureMode | None):
    rank, job, _ = _legends(ctx)
    loss, _ = _names(ctx)
    return time_series(title, describe(
        f"The loss each rank of the selected pods exports ({loss}; finite values only), and the job's loss "
        "smoothed (dashed): the median of its ranks over 15 minutes, which the loss alerts read.",
        "falling fast during warm-up, then slowly; a checkpoint or evaluation pass holds it, a restart makes it "
        "jump back once.", "a flat line after a hardware alert: see Suspected ghost loss; a gap: Loss not finite."),
        "short", [target(_rank_series(ctx, "rank:training_loss:finite"), rank),
                  target(_job_series(ctx, "job:training_loss:median_15m"), f"{job} smoothed", "B")],
        runbook_link(ctx, fm), dashed_refs=("B",))


def _step_per_rank_panel(ctx, title: str, fm: FailureMode | None):
    rank, job, _ = _legends(ctx)
    _, step = _names(ctx)
    return time_series(title, describe(
        f"Each rank's step time ({step}, or the mean of its histogram over 5 minutes) and the job's median "
        "(dashed).", "every rank close to the median; evaluation passes and checkpoints move all ranks together.",
        "one rank or one node's ranks above the others: Step-time straggler."),
        "s", [target(_rank_series(ctx, "rank:training_step:seconds"), rank),
              target(_job_series(ctx, "job:training_step:median"), f"{job} median", "B")],
        runbook_link(ctx, fm), dashed_refs=("B",))


def header_panels(ctx) -> list[Panel]:
    """Beside the table of the selected pods' GPUs: their hardware alerts, then loss and step time per rank
    (none with job_metrics.enabled: false, when the records they read are not rendered)."""
    if not ctx.settings.job_metrics.enabled:
        return []
    return [_hardware_alerts_panel(ctx, "Hardware alerts on the selected pods' GPUs", ctx.mode("ghost_loss")),
            _loss_per_rank_panel(ctx, "Training loss per rank", ctx.mode("loss_plateau")),
            _step_per_rank_panel(ctx, "Step time per rank", ctx.mode("step_time_straggler"))]


def mode_panels(ctx, fm: FailureMode) -> list[Panel]:
    """The row of a failure mode that reads job metrics: its main comparison first (the panel the
    alert's dashboard_url opens, titled with the failure mode), then the series behind it."""
    rank, job, gpu = _legends(ctx)
    link = runbook_link(ctx, fm)
    act, runbook = _fm_text(ctx, fm)

    def main(title, desc, normal, unit, targets, steps=None, dashed=()):
        return time_series(f"{fm.title}: {title}", describe(desc, normal, act, runbook), unit, targets, link,
                             steps, dashed)

    if fm.id == "ghost_loss":
        window = _threshold(ctx, "ghost_loss", "window", 21600) / 3600
        return [
            main("minutes from the hardware alert to the loss problem", (
                "For each GPU of a job whose loss diverges or stalls now: minutes from the first firing of a hardware "
                f"alert on it (within {promql.format_number(window)} h) to the first time the loss problem was seen "
                "(gpu:ghost_loss:minutes, labels hardware_failure_mode and symptom)."),
                "no series.", "m", [target(_gpu_series(ctx, "gpu:ghost_loss:minutes"),
                                             f"{job} {gpu} {{{{hardware_failure_mode}}}} then {{{{symptom}}}}")]),
            _hardware_alerts_panel(ctx, "Hardware alerts on the selected pods' GPUs", fm),
            _loss_per_rank_panel(ctx, "Training loss per rank", fm),
        ]
    if fm.id == "loss_divergence":
        ratio = _threshold(ctx, "loss_divergence", "ratio", 1.2)
        return [
            main("smoothed loss over its recent best", (
                "The job's smoothed loss over its lowest value of the history window (job:training_loss_vs_best:ratio)."),
                f"near 1 (100%); above {promql.format_number(ratio)} for 10 minutes the loss is diverging.",
                "percentunit", [target(_job_series(ctx, "job:training_loss_vs_best:ratio"), job)],
                threshold_steps(">", ratio, "warning")),
            _loss_per_rank_panel(ctx, "Training loss per rank", fm),
        ]
    if fm.id == "loss_plateau":
        low = _threshold(ctx, "loss_plateau", "min_improvement", 0.01)
        window = _threshold(ctx, "loss_plateau", "window", 3600)
        earlier = f"{int(window)}s"
        return [
            main("improvement on the best before the window", (
                "How much lower the smoothed loss is than its best before the last window "
                "(job:training_loss_improvement:recent), and the same one window earlier (dashed): a plateau is the "
                "first falling to a fraction of the second."),
                f"above {promql.format_number(low)} while the run learns; near or below 0 when it stalls.",
                "percentunit",
                [target(_job_series(ctx, "job:training_loss_improvement:recent"), job),
                 target(_of_selected_jobs(ctx, f"job:training_loss_improvement:recent{{{ctx.variables.matchers(('cluster', 'namespace'))}}}"
                                                 f" offset {earlier}"), f"{job} one window earlier", "B")],
                threshold_steps("<", low, "info"), ("B",)),
            _loss_per_rank_panel(ctx, "Training loss per rank", fm),
        ]
    if fm.id == "loss_not_finite":
        by = promql.by((ctx.settings.cluster_label, ctx.settings.namespace_label, "workload"))
        return [
            main("ranks with a finite loss vs ranks stepping", (
                "Ranks of the selected jobs that export a finite loss, and ranks that export step times (dashed). A NaN "
                "or infinite loss leaves the first count while the ranks keep stepping (on VictoriaMetrics the NaN "
                "samples are dropped, the same picture)."),
                "the two counts equal (or the loss count 1 when only rank 0 logs the loss).", "short",
                [target(f"count by ({by}) ({_rank_series(ctx, 'rank:training_loss:finite')})", f"{job} finite loss"),
                 target(f"count by ({by}) ({_rank_series(ctx, 'rank:training_step:seconds')})", f"{job} stepping",
                          "B")], dashed=("B",)),
            _loss_per_rank_panel(ctx, "Training loss per rank", fm),
        ]
    if fm.id == "step_time_straggler":
        ratio = _threshold(ctx, "step_time_straggler", "step_ratio", 1.25)
        cv = _threshold(ctx, "step_time_straggler", "cv", 0.1)
        return [
            main("each rank's step time over its job's median", (
                "A rank's step time over its job's median at the same time (rank:training_step_vs_job:ratio); the alert "
                "reads its median over 10 minutes."),
                f"every rank near 1 (100%); above {promql.format_number(ratio)} a rank holds its job back.",
                "percentunit", [target(_rank_series(ctx, "rank:training_step_vs_job:ratio"), rank)],
                threshold_steps(">", ratio, "warning")),
            time_series("StdDev / Mean of step time across ranks", describe(
                "The spread of a job's step times across its ranks (job:training_step:cv); above the line the ranks "
                "more than half a standard deviation above the mean are named.",
                f"below {promql.format_number(cv)}.", act, runbook), "percentunit",
                [target(_job_series(ctx, "job:training_step:cv"), job)], link, threshold_steps(">", cv, "warning")),
            _step_per_rank_panel(ctx, "Step time per rank", fm),
        ]
    return [main("alerts", fm.summary, "no series.", "short",
                 [target(f'ALERTS{{alertstate="firing", failure_mode="{fm.id}"}}', gpu)])]
