"""baselines.yaml: the signals each GPU is compared with its own history and its peers."""
from __future__ import annotations

from ..load.mapping import Fields, did_you_mean
from ..model.catalog import BASELINE_DIRECTIONS, BaselineSignal, BaselineStatistics, Threshold
from .common import read_title, read_unit, unique


def read_baselines(doc, errors, known_metrics) -> tuple[list[BaselineSignal], BaselineStatistics]:
    top = Fields(doc, errors, "baselines.yaml")
    items, wheres = top.list("baselines", required=True)
    statistics = _statistics(top, errors)
    top.done()
    out, seen, guards = [], {}, []
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "baseline", fallback=w)
        name = f.str("signal", required=True, pattern=r"[a-z][a-z0-9_]*") or "?"
        unique(f, "signal", name, seen, f"baseline signal {name!r}")
        metric = f.str("metric", required=True) or "?"
        if metric != "?" and metric not in known_metrics:
            errors.add(f.at("metric"), "unknown-metric", f"baseline {name}: unknown metric {metric!r}{did_you_mean(metric, known_metrics)}")
        unit = read_unit(f, f"baseline {name}")
        limits = {}
        for key in ("floor", "min_delta"):
            lf = Fields(f.mapping(key, required=True), errors, f"baseline {name} {key}", fallback=f.at(key))
            value = lf.num("value", required=True, default=1)
            if key == "floor" and value is not None and value <= 0:
                errors.add(lf.at("value"), "bad-value", f"baseline {name}: floor must be above 0 (it divides)")
            limits[key] = Threshold(name=key, value=float(value or 1), unit=unit,
                                    source=lf.str("source", required=True) or "")
            lf.done()
        same_load = f.str("same_load")
        if same_load is not None:
            guards.append((name, same_load, f.at("same_load")))
        out.append(BaselineSignal(
            signal=name, metric=metric, unit=unit,
            description=f.str("description", required=True) or "", value=f.str("value", required=True) or "",
            busy_only=bool(f.bool("busy_only", required=True)),
            direction=f.str("direction", required=True, choices=BASELINE_DIRECTIONS) or "up",
            alert=bool(f.bool("alert", required=True)), floor=limits["floor"], min_delta=limits["min_delta"],
            same_load=same_load, peers=bool(f.bool("peers", default=True)),
            reads_peers=bool(f.bool("reads_peers", default=False)), alert_signal=f.str("alert_signal"),
            where=f.at("value"), title=read_title(f, f"baseline {name}")))
        if out[-1].alert_signal is not None:
            guards.append((name, out[-1].alert_signal, f.at("alert_signal")))
        if out[-1].reads_peers and out[-1].peers:
            errors.add(f.at("reads_peers"), "bad-value",
                       f"baseline {name}: a signal that reads its peers is compared with its own history only (set peers: false)")
        f.done()
    by_name = {b.signal: b for b in out}
    for name, guard, where in guards:
        if guard not in by_name:
            errors.add(where, "unknown-signal", f"baseline {name}: names unknown baseline signal {guard!r}{did_you_mean(guard, list(by_name))}")
        elif guard == name:
            errors.add(where, "bad-value", f"baseline {name}: same_load and alert_signal cannot name the signal itself")
    return out, statistics


# statistics: key -> (unit, smallest value, integer)
STATISTICS = {"mad_to_sigma": ("ratio", 1.0, False), "min_history_points": ("points", 1, True),
              "peer_outlier_z": ("robust z", 1.0, False)}


def _statistics(top: Fields, errors) -> BaselineStatistics:
    """`statistics:`: the constants of the baseline arithmetic, each {value, source}."""
    sf = Fields(top.mapping("statistics", required=True), errors, "baselines.yaml statistics", fallback=top.at("statistics"))
    default = Threshold(name="?", value=1.0, unit="", source="")
    values = {key: default for key in STATISTICS}  # replaced below, or an error is reported
    for key, (unit, minimum, integer) in STATISTICS.items():
        f = Fields(sf.mapping(key, required=True), errors, f"statistics {key}", fallback=sf.at(key))
        value = f.num("value", required=True, minimum=minimum, integer=integer)
        source = f.str("source", required=True) or ""
        f.done()
        if value is not None:
            values[key] = Threshold(name=key, value=float(value), unit=unit, source=source)
    sf.done()
    return BaselineStatistics(**values)
