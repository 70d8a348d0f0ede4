"""Scenario files (fixtures/scenarios/*.yaml, format in fixtures/README.md) -> frozen Scenarios."""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import Collector, Diagnostic, RulesgenError
from ..memo import Memo, digest
from ..promql.tree import selectors
from .mapping import Fields, did_you_mean
from .yamlsource import load_file

_SERIES = re.compile(r"^\s*[a-zA-Z_:][a-zA-Z0-9_:]*\s*\{.*\}\s*$|^\s*[a-zA-Z_:][a-zA-Z0-9_:]*\s*$", re.S)


STALE = object()  # a promtool `stale` slot
_NUM = r"[-+]?(?:(?:[0-9]*\.)?[0-9]+(?:[eE][-+]?[0-9]+)?|Inf|inf|NaN|nan)"
_TOKEN = re.compile(rf"^(?P<a>{_NUM})(?:(?P<op>[-+])(?P<b>{_NUM}))?x(?P<n>[0-9]+)$")


def expand(values: str) -> list:
    """promtool 2.42 `values` notation -> one entry per slot: float, None (missing) or STALE.

    `a+bxN` / `a-bxN` / `axN` give N+1 samples, `_` one missing slot, `_xN` N missing slots,
    `stale` one staleness marker (fixtures/README.md has the table)."""
    out: list = []
    for tok in values.split():
        if tok == "_":
            out.append(None)
        elif tok.startswith("_x"):
            out.extend([None] * int(tok[2:]))
        elif tok == "stale":
            out.append(STALE)
        elif "x" in tok:
            m = _TOKEN.match(tok)
            if not m:
                raise ValueError(f"cannot read promtool value token {tok!r}")
            a, n = float(m.group("a")), int(m.group("n"))
            b = float(m.group("b") or 0) * (-1 if m.group("op") == "-" else 1)
            # promtool adds the increment step by step; keep its float rounding
            v = a
            for k in range(n + 1):
                out.append(v)
                v += b
        else:
            try:
                out.append(float(tok))
            except ValueError:
                raise ValueError(f"cannot read promtool value token {tok!r}") from None
    return out



@dataclass(frozen=True)
class Expectation:
    failure_mode: str
    labels: tuple[tuple[str, str], ...]
    after: int
    within: int
    continuous: bool = False  # firing at every step from after + within to the end, as one label set
    at: tuple[int, int] = field(default=(1, 1), compare=False)  # line, column of its failure_mode in the file


@dataclass(frozen=True)
class Scenario:
    name: str
    path: str
    description: str
    interval: int
    evaluation_interval: int
    duration: int
    series: tuple[tuple[str, str], ...]
    expect: tuple[Expectation, ...]
    also_allowed: tuple[str, ...]
    # `follows_settings: true`: the series take the configured selector's and host labels' values and the
    # expectations the configured host label (adapt()), so an example keeps passing in any configuration.
    follows_settings: bool = False

    @property
    def is_normal(self) -> bool:
        return not self.expect


def load_scenarios(paths: list[Path], failure_modes: list[str], known_metrics: set[str] | None = None,
                   job_metrics: tuple[str, ...] = ()) -> list[Scenario]:
    problems: list[Diagnostic] = []
    out = []
    for path in sorted(paths):
        try:
            out.append(load_scenario(path, failure_modes, known_metrics, job_metrics))
        except RulesgenError as exc:
            problems.extend(exc.diagnostics)
    if problems:
        raise RulesgenError(problems)
    names = {}
    for s in out:
        if s.name in names:
            problems.append(Diagnostic(s.path, 1, 1, "duplicate-id", f"scenario name {s.name!r} also used by {names[s.name]}"))
        names[s.name] = s.path
    if problems:
        raise RulesgenError(problems)
    return out


_LOADED: Memo[Scenario] = Memo(size=256)


def load_scenario(path: Path, failure_modes: list[str], known_metrics: set[str] | None = None,
                  job_metrics: tuple[str, ...] = ()) -> Scenario:
    """One scenario file, validated; loaded once per process for the same bytes and arguments, wherever the
    file lies (rulesgen/memo.py: a Scenario is immutable; each caller gets it with its own path, so that a
    file named relatively, absolutely or in a copied folder is parsed once)."""
    ((_, content),) = digest([path])
    if content is None:  # unreadable: the load says why
        return _load_scenario(path, failure_modes, known_metrics, job_metrics)
    key = (content, tuple(failure_modes), None if known_metrics is None else frozenset(known_metrics),
           tuple(job_metrics))
    scenario = _LOADED.get(key, lambda: _load_scenario(path, failure_modes, known_metrics, job_metrics))
    return scenario if scenario.path == str(path) else replace(scenario, path=str(path))


def _load_scenario(path: Path, failure_modes: list[str], known_metrics: set[str] | None = None,
                   job_metrics: tuple[str, ...] = ()) -> Scenario:
    """known_metrics: every name of the catalog's fields; a DCGM series named otherwise is an error
    (no exporter dialect knows it, so no rule could read it). job_metrics: the training jobs' series
    names the config reads (job_metrics: in rulesgen.yaml); other names are free (up, ...), but one a
    letter or two away from a job metric is a typo no rule would read."""
    errors = Collector()
    doc = load_file(path)
    f = Fields(doc, errors, "scenario")
    name = f.str("name", required=True, pattern=r"[a-z0-9][a-z0-9-]*") or path.stem
    description = f.str("description", required=True) or ""
    interval = f.duration("interval", required=True, default=30)
    evaluation = f.duration("evaluation_interval", default=interval)
    duration = f.duration("duration", required=True, default=3600)
    for key, value in (("interval", interval), ("evaluation_interval", evaluation), ("duration", duration)):
        if value is not None and value <= 0:
            errors.add(f.at(key), "bad-value", f"scenario.{key} must be positive")
    series = []
    items, wheres = f.list("series", required=True)
    for item, w in zip(items, wheres):
        sf = Fields(item, errors, "series", fallback=w)
        text = sf.str("series", required=True)
        values = sf.str("values", required=True)
        if text is not None and not _SERIES.match(text):
            errors.add(sf.at("series"), "bad-series", f"not a series selector in promtool notation: {text!r}")
        elif text is not None and known_metrics is not None:
            metric = text.split("{", 1)[0].strip()
            if metric.startswith("DCGM_") and metric not in known_metrics:
                errors.add(sf.at("series"), "unknown-metric",
                           f"series names {metric!r}, a field no exporter dialect in catalog/metrics.yaml knows"
                           f"{did_you_mean(metric, known_metrics)}")
            elif job_metrics and metric not in job_metrics and _near(metric, job_metrics):
                errors.add(sf.at("series"), "unknown-metric",
                           f"series names {metric!r}, not a job metric the config reads (job_metrics: in rulesgen.yaml)"
                           f"{did_you_mean(metric, job_metrics)}")
        if text is not None and values is not None:
            series.append((text, values))
        sf.done()
    expect = []
    items, wheres = f.list("expect")
    for item, w in zip(items, wheres):
        ef = Fields(item, errors, "expect", fallback=w)
        fm = ef.str("failure_mode", required=True)
        if fm is not None and fm not in failure_modes:
            errors.add(ef.at("failure_mode"), "unknown-failure-mode",
                       f"unknown failure mode {fm!r}{did_you_mean(fm, failure_modes)}")
        pairs = ef.str_map("labels", "expect.labels")
        after = ef.duration("after", required=True, default=0)
        within = ef.duration("within", required=True, default=0)
        continuous = ef.bool("continuous", default=False)
        if after is not None and duration is not None and after >= duration:
            errors.add(ef.at("after"), "bad-value", f"expect.after ({after}s) must be before the end of the replay ({duration}s)")
        if continuous and after is not None and within is not None and duration is not None and after + within >= duration:
            errors.add(ef.at("continuous"), "bad-value", f"expect.continuous: after + within ({after + within}s) must be "
                       f"before the end of the replay ({duration}s)")
        if fm is not None:
            at = ef.at("failure_mode")
            expect.append(Expectation(fm, pairs, after or 0, within or 0, bool(continuous), (at.line, at.col)))
        ef.done()
    follows = bool(f.bool("follows_settings", default=False))
    also = f.str_list("also_allowed")
    aw = f.at("also_allowed")
    for fm in also:
        if fm not in failure_modes:
            errors.add(aw, "unknown-failure-mode", f"also_allowed: unknown failure mode {fm!r}{did_you_mean(fm, failure_modes)}")
    f.done()
    errors.raise_if_any()
    return Scenario(name=name, path=str(path), description=description, interval=interval, evaluation_interval=evaluation,
                    duration=duration, series=tuple(series), expect=tuple(expect), also_allowed=tuple(sorted(set(also))),
                    follows_settings=follows)


def _near(name: str, names: tuple[str, ...]) -> bool:
    """A near miss of one of names (a typo), not merely a similar-looking other metric."""
    import difflib
    return bool(difflib.get_close_matches(name, list(names), n=1, cutoff=0.85))


# ---- scenarios against the configured selector -------------------------------------------------------

_LABEL_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"')


def _parse_series(text: str) -> tuple[str, dict[str, str]]:
    name, _, rest = text.partition("{")
    return name.strip(), {k: v for k, v in _LABEL_PAIR.findall(rest)}


def _format_series(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def selector_matchers(selector: str) -> tuple[tuple[str, str, str], ...]:
    """The (label, op, value) matchers of a configured selector (the inside of a selector's braces)."""
    return selectors("x{" + selector + "}")[0].matchers


def _matches(labels: dict[str, str], matchers) -> bool:
    for label, op, value in matchers:
        have = labels.get(label, "")
        ok = {"=": have == value, "!=": have != value,
              "=~": re.fullmatch(value, have) is not None, "!~": re.fullmatch(value, have) is None}[op]
        if not ok:
            return False
    return True


def _exporter_series(scenario: Scenario) -> list[str]:
    return [text for text, _ in scenario.series if text.lstrip().startswith("DCGM_")]


def unmatched_selector(scenario: Scenario, selector: str) -> Diagnostic | None:
    """A diagnostic when none of the scenario's DCGM series matches the selector: every rule would read
    nothing, and promtool would only say that the expected alerts did not fire."""
    series = _exporter_series(scenario)
    if not series:
        return None
    matchers = selector_matchers(selector)
    if any(_matches(_parse_series(text)[1], matchers) for text in series):
        return None
    example = _parse_series(series[0])[1]
    shown = ", ".join(f'{k}="{example[k]}"' for k, _, _ in matchers if k in example) or "none of its labels"
    return Diagnostic(scenario.path, 1, 1, "no-matching-series",
                      f"scenario {scenario.name}: none of its {len(series)} DCGM series matches the selector {selector} "
                      f"(rulesgen.yaml `selector:`; its series have {shown}): the rules read nothing from it, so no "
                      "expected alert can fire. Give the series the labels the selector asks for, or set "
                      "`follows_settings: true` in the scenario to have them follow the configuration.")


def _satisfy(labels: dict[str, str], matchers) -> dict[str, str]:
    out = dict(labels)
    for label, op, value in matchers:
        have = out.get(label, "")
        if op == "=":
            out[label] = value
        elif op == "=~" and re.fullmatch(value, have) is None and re.fullmatch(value, re.sub(r"\\(.)", r"\1", value)):
            out[label] = re.sub(r"\\(.)", r"\1", value)   # a literal regex (e.g. "gpu-metrics"): its own text
        elif op in ("!=", "!~") and not _matches({label: have}, [(label, op, value)]) and _matches({}, [(label, op, value)]):
            out.pop(label, None)
    return out


def adapt(scenario: Scenario, selector: str, host_label: str, host_sources: tuple[str, ...]) -> Scenario:
    """A `follows_settings` scenario as the configuration sees it: series labels that satisfy the selector,
    the host label renamed to the first configured source, expectations keyed by the output host label."""
    if not scenario.follows_settings:
        return scenario
    from dataclasses import replace
    matchers = selector_matchers(selector)
    source = host_sources[0] if host_sources else host_label
    series = []
    for text, values in scenario.series:
        name, labels = _parse_series(text)
        if "Hostname" in labels and "Hostname" not in host_sources:
            labels = {(source if k == "Hostname" else k): v for k, v in labels.items()}
        series.append((_format_series(name, _satisfy(labels, matchers)), values))
    expect = tuple(replace(e, labels=tuple(sorted(((host_label if k == "Hostname" else k), v) for k, v in e.labels)))
                   for e in scenario.expect)
    return replace(scenario, series=tuple(series), expect=expect)
