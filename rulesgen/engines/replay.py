"""Replay scenarios through the real promtool and read back which alerts fired, and when."""
from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path


from .. import processes
from ..builders.promtool_tests import (
    CONTINUOUS, FIRST_FIRING, continuity_tests, document, expr_tests, listing_test, onset_tests, per_mode_test,
    repeats, timing_test)
from ..durations import format_duration
from ..load.scenarios import Scenario
from ..promql.text import label_set
from ..render.yamltext import dump, load
from .tools import find_tool

_GOT = re.compile(r"^\s*got:\s*(.*)$")
_EXPR = re.compile(r'^\s*expr: ("(?:[^"\\]|\\.)*"), time: ([^,\s]+),?\s*$')
_SERIES = re.compile(r'\{((?:[^{}"]|"(?:[^"\\]|\\.)*")*)\}')


@dataclass(frozen=True)
class Fired:
    labels: tuple[tuple[str, str], ...]
    first_firing: int  # seconds from the start of the replay
    last_firing: int | None = None  # set for the series of a `continuous` expectation
    steps: int | None = None  # ... and its firing steps from the expectation's after + within on

    @property
    def failure_mode(self) -> str:
        return dict(self.labels).get("failure_mode", "?")


@dataclass(frozen=True)
class Outcome:
    scenario: Scenario
    fired: tuple[Fired, ...]
    missing: tuple[str, ...]      # expectations not met, explained
    unexpected: tuple[Fired, ...]  # false alerts

    @property
    def ok(self) -> bool:
        return not self.missing and not self.unexpected


# promtool's test engine allocates per rule and step; a lazier Go GC (4x live heap, well under 1 GiB
# for the bundled scenarios) cuts its CPU time by ~20%. An explicit GOGC in the environment wins.
PROMTOOL_ENV = {"GOGC": "400"}


def promtool_env() -> dict[str, str]:
    return {**PROMTOOL_ENV, **os.environ}


def run_promtool_test(files: list[Path], cwd: Path | None = None, timeout: int = 600) -> tuple[int, str]:
    proc = processes.run([find_tool("promtool"), "test", "rules", *files], cwd=cwd, timeout=timeout, env=promtool_env())
    return proc.returncode, proc.stdout + proc.stderr


def got_series(output: str) -> list[dict[str, str]]:
    """The label sets in promtool's `got:` lines (the answers of failed promql_expr_tests)."""
    out = []
    for line in output.splitlines():
        m = _GOT.match(line)
        if not m:
            continue
        for body in _SERIES.findall(m.group(1)):
            out.append(label_set(body))
    return out


def group_order(rule_paths: list[Path]) -> list[str]:
    """Group names in file order, the order the rule files were rendered to be evaluated in."""
    return [g["name"] for p in rule_paths for g in (load(p.read_text()) or {}).get("groups") or []]


def run_test(doc: dict, workdir: Path, name: str) -> str:
    """promtool's output for one test document, written to workdir/name.yaml; failed tests are
    answers (their `got:` lines), any other error raises."""
    path = workdir / f"{name}.yaml"
    path.write_text(dump(doc))
    rc, output = run_promtool_test([path], cwd=workdir)
    # A failed query test answers with `got:` lines (or `err:`, past the sample limit); a FAILED without
    # them is promtool refusing the file (a parse error), never "nothing fired".
    if rc != 0 and ("FAILED" not in output or not ("got:" in output or "err:" in output)):
        raise RuntimeError(f"promtool could not run {name}:\n{output.strip()}")
    return output


def replay(scenario: Scenario, rule_paths: list[Path], failure_modes: list[str]) -> Outcome:
    """One promtool run with a first-firing query per failure mode; if a mode fired on so many
    series that its subquery passes promtool's 10,000-sample limit, fall back to listing the fired
    series first and timing each one alone."""
    rule_files = [str(p.resolve()) for p in rule_paths]
    order = group_order(rule_paths)
    with tempfile.TemporaryDirectory(prefix="rulesgen-replay-") as tmp:
        work = Path(tmp)
        output = run_test(per_mode_test(scenario, rule_files, order, failure_modes), work, "modes")
        if "err:" not in output:
            got = got_series(output)
            fired = [Fired(tuple(sorted((k, v) for k, v in labels.items() if k not in ("alertstate", "first_firing"))),
                           int(float(labels["first_firing"]))) for labels in got if "first_firing" in labels]
            return judge(scenario, fired, [g for g in got if "continuous_index" in g or "repeat_index" in g])
        listed = got_series(run_test(listing_test(scenario, rule_files, order), work, "list"))
        fired = []
        if listed:
            doc = timing_test(scenario, rule_files, order, listed)
            # Tag each query with its index so answers map back to series whatever order promtool prints.
            for i, test in enumerate(doc["tests"][0]["promql_expr_test"]):
                test["expr"] = f'label_replace({test["expr"]}, "series_index", "{i}", "", "")'
            for answer in got_series(run_test(doc, work, "timing")):
                i = int(answer["series_index"])
                fired.append(Fired(tuple(sorted((k, v) for k, v in listed[i].items() if k != "alertstate")),
                                   int(float(answer["first_firing"]))))
        continuity = []
        if continuity_tests(scenario) or onset_tests(scenario):
            doc = document(scenario, rule_files, order, continuity_tests(scenario) + onset_tests(scenario))
            continuity = got_series(run_test(doc, work, "continuity"))
    return judge(scenario, fired, continuity)


def judge(scenario: Scenario, fired: list[Fired], continuity: list[dict[str, str]] = ()) -> Outcome:
    """continuity: the answers of continuity_tests (label sets with continuous_index and last_firing
    or steps) and of onset_tests (repeat_index and onset)."""
    fired = sorted(fired, key=lambda f: (f.first_firing, f.labels))
    missing, covered = [], set()
    for i, e in enumerate(scenario.expect):
        if e.continuous:
            missing += _discontinuities(scenario, e, fired, [c for c in continuity if c.get("continuous_index") == str(i)])
        matches = [f for f in fired if f.failure_mode == e.failure_mode and set(e.labels) <= set(f.labels)]
        covered.update(matches)
        if not matches:
            missing.append(f"{e.failure_mode} {dict(e.labels)} never fired (expected by {_fmt(e.after + e.within)})")
            continue
        first = min(m.first_firing for m in matches)
        if repeats(scenario, e):
            onsets = [int(float(c["onset"])) for c in continuity if c.get("repeat_index") == str(i)
                      and set(e.labels) <= set(c.items())]
            if not onsets:
                missing.append(f"{e.failure_mode} {dict(e.labels)} did not fire anew after the fault at {_fmt(e.after)} "
                               f"(expected by {_fmt(e.after + e.within)}; an earlier page is no new page)")
            elif min(onsets) > e.after + e.within:
                missing.append(f"{e.failure_mode} {dict(e.labels)} fired anew at {_fmt(min(onsets))}, later than "
                               f"{_fmt(e.after + e.within)}")
            continue
        if first < e.after:
            missing.append(f"{e.failure_mode} {dict(e.labels)} fired at {_fmt(first)}, before the fault at {_fmt(e.after)}")
        elif first > e.after + e.within:
            missing.append(f"{e.failure_mode} {dict(e.labels)} fired at {_fmt(first)}, later than {_fmt(e.after + e.within)}")
    unexpected = tuple(f for f in fired if f not in covered and f.failure_mode not in scenario.also_allowed)
    return Outcome(scenario, tuple(fired), tuple(missing), unexpected)


def _series_key(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    drop = ("alertstate", "continuous_index", "last_firing", "steps", "first_firing", "repeat_index", "onset")
    return tuple(sorted((k, v) for k, v in labels.items() if k not in drop))


def _discontinuities(scenario: Scenario, e, fired: list[Fired], answers: list[dict[str, str]]) -> list[str]:
    """What breaks a `continuous` expectation: a resolve (the alert not firing at some step from
    after + within to the end) or a relabelled twin (more than one label set firing in that range)."""
    start, end, step = e.after + e.within, scenario.duration, scenario.evaluation_interval
    last = {_series_key(a): int(float(a["last_firing"])) for a in answers if "last_firing" in a}
    steps = {_series_key(a): int(float(a["steps"])) for a in answers if "steps" in a}
    first = {f.labels: f.first_firing for f in fired}
    what = f"{e.failure_mode} {dict(e.labels)}"
    in_range = sorted(k for k in steps if steps[k] > 0)
    if not in_range:
        return [f"{what} continuous: not firing from {_fmt(start)} to the end"] if first else []
    out = []
    if len(in_range) > 1:
        varying = sorted({k for key in in_range for k, v in key if any(dict(o).get(k) != v for o in in_range)})
        parts = []
        for key in sorted(in_range, key=lambda k: (first.get(k, 0), k)):
            labels = dict(key)
            shown = ", ".join(f"{k}={labels.get(k, '')!r}" for k in varying)
            parts.append(f"{{{shown}}} firing {_fmt(first.get(key, start))}-{_fmt(last.get(key, end))}")
        out.append(f"{what} continuous: RELABELLED TWIN, {len(in_range)} label sets fired from {_fmt(start)} on, "
                   f"differing in {', '.join(varying)}: " + "; ".join(parts))
    expected = (end - start) // step + 1
    if len(in_range) == 1 and (steps[in_range[0]] < expected or last.get(in_range[0], end) < end):
        total, at = steps[in_range[0]], last.get(in_range[0], end)
        gap = f"RESOLVED at {_fmt(at + step)}" if at < end else "RESOLVED and fired again"
        out.append(f"{what} continuous: {gap}: firing at {total} of the {expected} evaluation steps from "
                   f"{_fmt(start)} to the end ({_fmt(end)})")
    return out


def _fmt(seconds: int) -> str:
    h, rest = divmod(int(seconds), 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m{s:02d}s"


def format_outcome(o: Outcome, host_label: str = "Hostname") -> str:
    lines = [f"{'PASS' if o.ok else 'FAIL'} {o.scenario.name}: {o.scenario.description}"]
    for f in o.fired:
        labels = dict(f.labels)
        where = " ".join(f"{k}={labels[k]}" for k in (host_label, "gpu", "instance", "xid", "signal") if k in labels)
        if f in o.unexpected:
            verdict = "FALSE ALERT"
        elif f.failure_mode in o.scenario.also_allowed and not any(
                e.failure_mode == f.failure_mode for e in o.scenario.expect):
            verdict = "allowed"
        else:
            verdict = "expected"
        lines.append(f"  {_fmt(f.first_firing):>10}  {labels.get('alertname', '?'):<28} {f.failure_mode:<24} "
                     f"{labels.get('severity', ''):<8} {where}  [{verdict}]")
    if not o.fired:
        lines.append("  (nothing fired)")
    lines += [f"  MISSING: {m}" for m in o.missing]
    return "\n".join(lines)


# ---- `rulesgen test`: promtool's failures in rulesgen's words ---------------------------------------------

def failed_queries(output: str) -> list[tuple[str, str, str]]:
    """(expr, eval time, what promtool got) of each failed promql_expr_test in promtool's output."""
    import json
    out, current = [], None
    for line in output.splitlines():
        m = _EXPR.match(line)
        if m:
            try:
                current = (json.loads(m.group(1)), m.group(2))
            except ValueError:  # a Go escape JSON does not know: not attributable
                current = None
            continue
        got = _GOT.match(line)
        if got and current is not None:
            out.append((*current, got.group(1).strip()))
            current = None
    return out


def _alert(e, alert_names: dict[str, list[str]]) -> str:
    names = " or ".join(alert_names.get(e.failure_mode, [])) or "an alert"
    labels = ", ".join(f'{k}="{v}"' for k, v in e.labels)
    return f"{names}{{{labels}}} (failure mode {e.failure_mode})"


def _normal(expr: str) -> str:
    return " ".join(expr.split())


def explain_failures(scenario: Scenario, output: str, alert_names: dict[str, list[str]]) -> list[str]:
    """What failed in a scenario's promtool test, one line per failed query: the expectation (alert name,
    labels, window) or the alerts that fired unexpected; promtool's own output says it only as PromQL."""
    meaning = {_normal(expr): (kind, e) for expr, kind, e in expr_tests(scenario)}
    lines = []
    for expr, at, got in failed_queries(output):
        kind, e = meaning.get(_normal(expr), (None, None))
        never = got == "nil"
        if kind == FIRST_FIRING:
            window = f"{format_duration(e.after) if e.after else '0s'} and {format_duration(e.after + e.within)}"
            lines.append(f"expected {_alert(e, alert_names)} to first fire between {window} (evaluated at {at}): "
                         + ("it never fired" if never else "it fired, but first outside that window"))
        elif kind == CONTINUOUS:
            lines.append(f"expected {_alert(e, alert_names)} to keep firing, as one label set, from "
                         f"{format_duration(e.after + e.within)} to the end (evaluated at {at}): "
                         + ("it never fired" if never else "it resolved in between, or fired under more than one label set"))
        elif kind is not None:
            fired = got_series(f"got: {got}")
            shown = "; ".join(f"{f.get('alertname', '?')}{{"
                              + ", ".join(f'{k}="{v}"' for k, v in sorted(f.items()) if k not in ("alertname", "alertstate"))
                              + "}" for f in fired)
            lines.append(f"alerts fired by {at} that the scenario neither expects nor allows (also_allowed): "
                         + (shown or got))
        else:
            lines.append(f"a query rulesgen did not generate failed (evaluated at {at}): got {got}")
    if not lines:
        lines.append("promtool failed without a failed query (a rule file or the test did not load): see its output")
    return lines
