"""The hand-made panels: the dashboard panels (and failure-mode rows) drawn by code of their own rather
than read from a failure mode's alerts. Each reads catalog names -- the failure mode it explains and links
to, thresholds of that mode it draws, other modes whose alerts it shows -- and those names are catalog data
(catalog/dashboards.yaml), checked when the catalog loads (rulesgen/catalog/dashboards.py). A panel the
catalog does not declare is not drawn.

Data only, no builders: the catalog loader reads this table. A builder asks for its declaration by its id
(Context.hand_made) and reads its thresholds by the roles listed here, never by a catalog name; the recording
rules it queries it asks for by their role in rulesgen/model/roles.py (signals.yaml roles:), and declaring the
panel makes those roles required at load.
"""
from __future__ import annotations

from dataclasses import dataclass

PANEL, ROW = "panel", "row"


@dataclass(frozen=True)
class PanelSpec:
    """What the builder of a hand-made panel needs from its declaration.

    kind: PANEL, drawn in its dashboard's header row; ROW, the whole row of the failure mode it names.
    roles: the thresholds it draws, each the value of one threshold of its failure mode (role -> name in
    the catalog). alerts_of: whether it shows the firing alerts of a list of failure modes. records: the
    recording rules it queries, by their role in name_roles.ROLES (declaring the panel makes them required)."""
    kind: str
    about: str
    roles: tuple[str, ...] = ()
    alerts_of: bool = False
    records: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()  # the TEXTS it draws besides its own id's (dashboards.yaml texts:)


LOSS_PER_RANK = ("rank_loss", "job_loss_smoothed", "training_job")
STEP_PER_RANK = ("rank_step", "job_step_median", "training_job")


# The titles and descriptions of the panels drawn by code of their own: catalog/dashboards.yaml `texts:`, by id,
# each a {title, shows, normal, do} of templates. Here: the placeholders the builder fills in each ([[ NAME ]]), checked at load.
# A panel's text has its id (and its spec's `texts`); ALWAYS_TEXTS are drawn whatever the file declares.
TEXTS = {
    "alerts.firing": (),
    "alerts.firing_table": ("lead_hours",),
    "fleet.gpus_by_model": ("signal",),
    "fleet.health_state": ("mode",),
    "fleet.utilisation": ("mode", "runbook_do"),
    "fleet.gpu_hours": ("idle_util", "mode", "threshold"),
    "fleet.cost": ("idle_util", "price_default", "model_prices", "runbook_do"),
    "jobs.pods_gpus": (),
    "jobs.rank_clock_spread": ("signal", "straggler_below", "runbook_do"),
    "jobs.rank_sm_spread": (),
    "jobs.per_gpu": ("signal", "signal_title"),
    "jobs.pods_alerts": (),
    "jobs.hardware_alerts": (),
    "jobs.loss_per_rank": ("loss",),
    "jobs.step_per_rank": ("step",),
    "rows.job_alerts": ("summary", "runbook_do"),
    "baselines.signals": ("description", "value_record", "history_span", "busy_only", "alert", "sign", "alert_edge",
                          "floor", "runbook_do", "signal_title"),
    "rows.baseline_deviation.history": ("signals", "history_edge", "min_history_days", "runbook_do"),
    "rows.baseline_deviation.peers": ("signals", "peer_edge", "mad_to_sigma", "runbook_do"),
    "rows.ghost_loss": ("record", "look_back_hours", "runbook_do"),
    "rows.loss_divergence": ("record", "diverging_above", "runbook_do"),
    "rows.loss_plateau": ("record", "learning_above", "runbook_do"),
    "rows.loss_not_finite": ("runbook_do",),
    "rows.step_time_straggler": ("record", "straggler_above", "runbook_do"),
    "rows.step_time_straggler.spread": ("record", "spread_above", "runbook_do"),
}
ALWAYS_TEXTS = ("alerts.firing", "alerts.firing_table", "fleet.gpus_by_model", "jobs.per_gpu", "jobs.pods_alerts", "rows.job_alerts")
TEXT_KEYS = ("shows", "normal", "do")
TITLE_KEY = "title"  # optional beside TEXT_KEYS: the panel's title (of a row's panel, the part after the mode's title)


PANELS = {
    "fleet.health_state": PanelSpec(PANEL, "GPU Fleet Overview: GPUs by health state (links the capacity runbook)",
                                     records=("fleet_gpus",)),
    "fleet.utilisation": PanelSpec(PANEL, "GPU Fleet Overview: SM active against GPU_UTIL (the utilisation myth)",
                                    records=("fleet_sm_active", "fleet_gpu_util")),
    "fleet.gpu_hours": PanelSpec(PANEL, "GPU Fleet Overview: busy and idle GPU-hours", ("idle_util",),
                                  records=("util_per_gpu",)),
    "fleet.cost": PanelSpec(PANEL, "GPU Fleet Overview: estimated cost and waste", ("idle_util",),
                              records=("util_per_gpu",)),
    "jobs.pods_gpus": PanelSpec(PANEL, "GPU Jobs: table of the selected pods' GPUs", records=("util_per_gpu",)),
    "jobs.rank_clock_spread": PanelSpec(PANEL, "GPU Jobs: SM clock of each rank against its job's median",
                                        ("straggler_below",), records=("sm_clock_vs_job",)),
    "jobs.rank_sm_spread": PanelSpec(PANEL, "GPU Jobs: max - min SM active across a job's ranks",
                                     records=("sm_active_per_gpu",)),
    "jobs.hardware_alerts": PanelSpec(PANEL, "GPU Jobs: hardware alerts on the selected pods' GPUs", alerts_of=True),
    "jobs.loss_per_rank": PanelSpec(PANEL, "GPU Jobs: training loss per rank", records=LOSS_PER_RANK),
    "jobs.step_per_rank": PanelSpec(PANEL, "GPU Jobs: step time per rank", records=STEP_PER_RANK),
    "baselines.signals": PanelSpec(PANEL, "GPU Baselines: one panel per baseline signal, with the alert edge",
                                   ("alert_edge",)),
    "rows.baseline_deviation": PanelSpec(ROW, "z against the GPU's history and robust z against its node peers",
                                         ("history_edge", "peer_edge"),
                                         texts=("rows.baseline_deviation.history", "rows.baseline_deviation.peers")),
    "rows.ghost_loss": PanelSpec(ROW, "minutes from a hardware alert to the loss problem", ("look_back",), alerts_of=True,
                                 records=("ghost_loss_minutes", *LOSS_PER_RANK),
                                 texts=("jobs.hardware_alerts", "jobs.loss_per_rank")),
    "rows.loss_divergence": PanelSpec(ROW, "smoothed loss over its recent best", ("diverging_above",),
                                     records=("job_loss_vs_best", *LOSS_PER_RANK), texts=("jobs.loss_per_rank",)),
    "rows.loss_plateau": PanelSpec(ROW, "improvement of the loss on its best before the window",
                                   ("learning_above", "earlier_by"), records=("job_loss_improvement", *LOSS_PER_RANK),
                                   texts=("jobs.loss_per_rank",)),
    "rows.loss_not_finite": PanelSpec(ROW, "ranks with a finite loss against ranks stepping",
                                      records=(*LOSS_PER_RANK, "rank_step"), texts=("jobs.loss_per_rank",)),
    "rows.step_time_straggler": PanelSpec(ROW, "each rank's step time over its job's median, and the spread",
                                          ("straggler_above", "spread_above"),
                                          records=("rank_step_vs_job", "job_step_cv", *STEP_PER_RANK),
                                          texts=("rows.step_time_straggler.spread", "jobs.step_per_rank")),
}
