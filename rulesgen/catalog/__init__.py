"""Load catalog/*.yaml into a validated, frozen Catalog (all errors reported at once). One module per
catalog file (metrics.py also reads signals, xids and GPU models); this one reads the files and cross-checks."""
from __future__ import annotations

from pathlib import Path

from ..errors import Collector, RulesgenError, Where
from ..memo import Memo, digest
from ..load.yamlsource import Node, load_file_kept
from ..model.catalog import Catalog, Routing
from ..model.panels import PANELS
from ..model.roles import METRIC, RECORD, ROLES
from .baselines import read_baselines
from .dashboards import read_dashboards, read_texts
from .failure_modes import check_baseline_mode, check_covers, read_failure_modes
from .health import read_health, with_health_covers
from .metrics import check_bits_used, read_gpu_models, read_metrics, read_signal_windows, read_signals, read_xids
from .policy import read_xid_drain
from .roles import read_roles, resolve_roles
from .routing import read_routing
from .slos import read_slos

CATALOG_FILES = ("metrics.yaml", "signals.yaml", "failure_modes.yaml", "xid.yaml", "gpu_models.yaml")
OPTIONAL_FILES = ("baselines.yaml",  # a catalog without it renders no baseline rules
                  "dcgm_health.yaml",  # without it DCGM's health verdict has no code classes and covers nothing
                  "alertmanager.yaml",  # without it: Alertmanager's default timings, no silences
                  "dashboards.yaml",  # without it no hand-made dashboard panel is drawn, only the failure-mode rows
                  "slos.yaml")  # without it no SLO can be rendered


def bundled_catalog_dir() -> Path:
    """The catalog shipped with rulesgen. Its one source is the repository's top-level catalog/ (a
    checkout or the editable install); the wheel carries it as package data, rulesgen/_catalog."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "_catalog", package.parent / "catalog"):
        if (candidate / "failure_modes.yaml").is_file():
            return candidate
    return package / "_catalog"


_LOADED: Memo[Catalog] = Memo(size=8)


def load_catalog(directory: Path) -> Catalog:
    """The catalog in `directory`, validated (every problem at its file and line, all at once). Loaded
    once per process for the same files (rulesgen/memo.py): the Catalog is immutable."""
    files = [directory / name for name in CATALOG_FILES + OPTIONAL_FILES]
    return _LOADED.get(digest(files), lambda: _load_catalog(directory))


def _load_catalog(directory: Path) -> Catalog:
    errors = Collector()
    docs = {}
    problems = []
    for name in CATALOG_FILES + tuple(n for n in OPTIONAL_FILES if (directory / n).exists()):
        try:
            docs[name] = load_file_kept(directory / name, str(directory / name), collect=errors.items)
        except RulesgenError as exc:
            problems.extend(exc.diagnostics)
    if problems:  # a file that does not parse leaves nothing to cross-check
        raise RulesgenError(problems + errors.items)
    docs = {name: _top_mapping(doc, str(directory / name), name, errors) for name, doc in docs.items()}

    metrics = read_metrics(docs["metrics.yaml"], errors)
    known_metrics = {n for m in metrics for n in m.names}
    signals = read_signals(docs["signals.yaml"], errors, known_metrics)
    signal_windows = read_signal_windows(docs["signals.yaml"], errors, signals)
    check_bits_used(signals, metrics, errors)
    records = {s.record for s in signals}
    metric_roles, metrics_at = read_roles(docs["metrics.yaml"], errors, METRIC, {m.name for m in metrics})
    record_roles, signals_at = read_roles(docs["signals.yaml"], errors, RECORD, records)
    xids = read_xids(docs["xid.yaml"], errors)
    xid_drain = read_xid_drain(docs["xid.yaml"], errors)
    default, models, own_limits = read_gpu_models(docs["gpu_models.yaml"], errors, known_metrics)
    modes = read_failure_modes(docs["failure_modes.yaml"], errors, known_metrics, {n for m in metrics if m.profiling for n in m.names},
                               (record_roles.get("workload") or ROLES["workload"].default)[0])
    baselines, statistics = (read_baselines(docs["baselines.yaml"], errors, known_metrics) if "baselines.yaml" in docs
                             else ([], None))
    health = read_health(docs["dcgm_health.yaml"], errors) if "dcgm_health.yaml" in docs else None
    if health is not None:
        modes = with_health_covers(modes, health, errors)
    check_covers(modes, baselines, health, errors)
    check_baseline_mode(docs["failure_modes.yaml"], modes, baselines, errors)
    routing = read_routing(docs["alertmanager.yaml"], errors, modes) if "alertmanager.yaml" in docs else Routing()
    panels = read_dashboards(docs["dashboards.yaml"], errors, modes) if "dashboards.yaml" in docs else []
    texts = read_texts(docs["dashboards.yaml"], errors, panels) if "dashboards.yaml" in docs else ()
    burn_tiers, slos = read_slos(docs["slos.yaml"], errors) if "slos.yaml" in docs else ((), ())
    roles = resolve_roles({**metric_roles, **record_roles}, {METRIC: {m.name for m in metrics}, RECORD: records},
                          {METRIC: metrics_at, RECORD: signals_at}, _readers(panels, baselines), errors)
    errors.raise_if_any()
    return Catalog(metrics=tuple(metrics), signals=tuple(signals), failure_modes=tuple(modes), xids=tuple(xids),
                   gpu_default=default, gpu_models=tuple(models), baselines=tuple(baselines),
                   baseline_statistics=statistics, health=health, routing=routing, hand_made_panels=tuple(panels),
                   own_limits=tuple(own_limits), roles=roles, xid_drain=xid_drain,
                   signal_windows=signal_windows, panel_texts=texts, burn_tiers=burn_tiers, slos=slos)


def _top_mapping(doc, path: str, name: str, errors: Collector) -> Node:
    """A catalog file's top level as a mapping that knows its file: an empty file is an empty mapping at its
    first line, and one that is a list or a text is said to be wrong there (the readers then report its
    missing keys at the file, not at an unknown place)."""
    if isinstance(doc, Node):
        return doc
    if doc is not None:
        errors.add(Where(path), "bad-type",
                   f"{name} must be a mapping of its keys, got {'a list' if isinstance(doc, list) else type(doc).__name__}")
    empty = Node()
    empty.where, empty.key_where, empty.body_where = Where(path), {}, {}
    return empty


def _readers(panels, baselines) -> dict[str, str]:
    """role -> what reads it, for the roles only some catalogs need: the declared hand-made panels' records
    (panel_specs.PanelSpec.records), GPU_UTIL for the busy-only baselines."""
    out = {}
    for p in panels:
        for role in PANELS[p.panel].records if p.panel in PANELS else ():
            out.setdefault(role, f"hand-made panel {p.panel} (dashboards.yaml line {p.where.line})")
    if any(b.busy_only for b in baselines):
        out.setdefault("util_per_gpu", "the busy-only baselines (baselines.yaml)")
    return out
