"""The GPU Baselines dashboard's own panels (one per baseline signal) and the baseline_deviation
row: each GPU against its own history and against its same-model peers on the node."""
from __future__ import annotations

from grafanalib.core import Panel

from ...model import conventions
from ...promql import text as promql
from .. import baselines as baseline_rules
from .context import Context, Reads
from .panels import runbook_link, target, threshold_steps, time_series
from .prose import one_line, panel_text, panel_title


def baseline_panels(ctx: Context) -> list[Panel]:
    """One panel per baseline signal: the GPU's last 30 minutes against its history band and its
    node peers' median (catalog/baselines.yaml); none when catalog/dashboards.yaml does not declare them."""
    reads = ctx.hand_made("baselines.signals")
    if reads is None:
        return []
    fm, z = reads.fm, reads.value("alert_edge")
    window = f"{ctx.settings.baselines.window // 86400}d"
    node = ctx.variables.matchers(("cluster", "host"))
    panels = []
    for b in ctx.catalog.baselines:
        now = ctx.gpu_series(baseline_rules.value_record(b), f'signal="{b.signal}"')
        # written hourly: read with last_over_time, or the band is a dot an hour
        mean = baseline_rules.history_read(conventions.BASELINE_HISTORY_MEAN,
                                           ctx.gpu_matchers(f'signal="{b.signal}"'))
        stddev = baseline_rules.history_read(conventions.BASELINE_HISTORY_STDDEV,
                                             ctx.gpu_matchers(f'signal="{b.signal}"'))
        spread = f"clamp_min({stddev}, {promql.format_number(b.floor.value)})"
        sign = "+" if b.direction == "up" else "-"
        targets = [
            target(ctx.selected_gpus(now), ctx.legend("gpu")),
            target(ctx.selected_gpus(mean), ctx.legend("gpu") + " history mean", "B"),
            target(f'{conventions.baseline_peers("node", "median")}{{{node}, signal="{b.signal}"}}',
                   f"{{{{{ctx.settings.host_label}}}}} {{{{modelName}}}} node peers median", "C"),
        ]
        if b.alert:
            targets.append(target(ctx.selected_gpus(f"{mean} {sign} {promql.format_number(z)} * {spread}"),
                                  ctx.legend("gpu") + " alert edge", "D"))
        desc = panel_text(ctx, "baselines.signals", description=one_line(b.description),
                          value_record=conventions.BASELINE_VALUE, history_span=window, busy_only=b.busy_only,
                          alert=b.alert, sign=sign, alert_edge=promql.format_number(z),
                          floor=promql.format_number(b.floor.value), runbook_do="; ".join(fm.runbook.act),
                          signal_title=b.panel_title)
        title = panel_title(ctx, "baselines.signals", f"{b.panel_title}: now, history and peers",
                            signal_title=b.panel_title)
        panels.append(time_series(title, desc, b.unit, targets,
                                  runbook_link(ctx, fm), dashed_refs=("B", "D")))
    return panels


def baseline_mode_panels(ctx: Context, reads: Reads) -> list[Panel]:
    """The baseline_deviation row: z against the GPU's own history, then robust z against its node
    peers, one series per GPU and alerting signal (positive = the harmful direction)."""
    fm, z, peer = reads.fm, reads.value("history_edge"), reads.value("peer_edge")
    alerting = [b for b in ctx.catalog.baselines if b.alert]
    legend = ctx.legend("gpu") + " {{signal}}"
    # The alert's own z expressions (builders/baselines.py), one target per signal.
    history = [target(ctx.selected_gpus(ctx.filtered(one_line(baseline_rules.history_z([b], ctx.settings)), "gpu")),
                      legend, chr(ord("A") + i)) for i, b in enumerate(alerting)]
    stats = ctx.catalog.baseline_statistics
    peers = [target(ctx.selected_gpus(ctx.filtered(one_line(baseline_rules.peer_z([b], "node", ctx.settings, stats)), "gpu")),
                    legend, chr(ord("A") + i)) for i, b in enumerate(alerting)]
    names = ", ".join(b.signal for b in alerting)
    return [
        time_series(f"{fm.title}: " + panel_title(ctx, "rows.baseline_deviation.history", "z against the GPU's own history"),
                    panel_text(
            ctx, "rows.baseline_deviation.history", signals=names, history_edge=promql.format_number(z),
            min_history_days=str(ctx.settings.baselines.min_history // 86400), runbook_do="; ".join(fm.runbook.act)),
            "short", history, runbook_link(ctx, fm), threshold_steps(">", z, "warning")),
        time_series(f"{fm.title}: " + panel_title(ctx, "rows.baseline_deviation.peers", "robust z against node peers"),
                    panel_text(
            ctx, "rows.baseline_deviation.peers", signals=names, peer_edge=promql.format_number(peer),
            mad_to_sigma=promql.format_number(stats.mad_to_sigma.value) if stats else "",
            runbook_do="; ".join(fm.runbook.act)),
            "short", peers, runbook_link(ctx, fm), threshold_steps(">", peer, "warning")),
    ]

