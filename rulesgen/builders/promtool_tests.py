"""Scenarios -> promtool unit-test documents.

Each expectation becomes a promql_expr_test whose answer is 1 exactly when the alert first fired
inside [after, after + within] (an expectation repeating an earlier one's failure mode and labels, a
second fault of the same GPU, asks for a new onset there: firing again after it had resolved); a `continuous: true` expectation adds one whose answer is 1 exactly
when the alert was firing at every evaluation step from after + within to the end, as one label set
(no resolve, no relabelled twin); one more test lists every firing alert that no expectation or
also_allowed covers and expects none. First-firing times come from a subquery over
timestamp(ALERTS), filtered to few series so that promtool's 10,000-sample limit holds.
"""
from __future__ import annotations

from ..durations import format_duration
from ..load.scenarios import Expectation, Scenario
from ..promql.text import escape


def firing(matchers: dict[str, str]) -> str:
    parts = ['alertstate="firing"'] + [f'{k}="{escape(v)}"' for k, v in sorted(matchers.items())]
    return "ALERTS{" + ", ".join(parts) + "}"


def replay_range(s: Scenario) -> str:
    return format_duration(s.duration + s.evaluation_interval)


def onset_expr(s: Scenario, alerts: str, since: int) -> str:
    """Per series of `alerts`, its first onset at or after `since` (seconds from the start), evaluated at
    the scenario's end: a step where it fires and did not fire one evaluation before (an alert still
    firing from an earlier fault is no new page)."""
    step = format_duration(s.evaluation_interval)
    # one second more than the distance: the step at `since` is inside the left-open range
    window = format_duration(s.duration - since + 1)
    return f"min_over_time((timestamp({alerts}) unless {alerts} offset {step})[{window}:{step}])"


def first_firing_expr(s: Scenario, matchers: dict[str, str], since: int | None = None) -> str:
    """The first time the alert fired; with `since`, its first onset at or after it (onset_expr)."""
    alerts, step = firing(matchers), format_duration(s.evaluation_interval)
    if since is None:
        return f"min(min_over_time(timestamp({alerts})[{replay_range(s)}:{step}]))"
    return f"min({onset_expr(s, alerts, since)})"


def repeats(s: Scenario, e: Expectation) -> bool:
    """e expects the same failure mode and labels as an earlier expectation: a second fault."""
    earlier = s.expect[:s.expect.index(e)]
    return any((x.failure_mode, x.labels) == (e.failure_mode, e.labels) for x in earlier)


def expectation_expr(s: Scenario, e: Expectation, first_firing=first_firing_expr) -> str:
    """1 when the expected alert first fired inside [after, after + within] (a repeated expectation:
    fired anew there); first_firing(s, matchers, since) gives the time in seconds since the start of the
    replay (vmalert_tests.py passes its own)."""
    since = e.after if repeats(s, e) else None
    first = first_firing(s, {"failure_mode": e.failure_mode, **dict(e.labels)}, since)
    return f"({first} >= bool {e.after}) * ({first} <= bool {e.after + e.within})"


def continuous_range(s: Scenario, e: Expectation) -> str:
    """From after + within to the end of the replay: one second more than their distance, so that the
    step at after + within is inside both Prometheus 3's left-open and 2.x's closed ranges, and the
    step before it is not."""
    return format_duration(s.duration - (e.after + e.within) + 1)


def expect_matchers(e: Expectation) -> dict[str, str]:
    return {"failure_mode": e.failure_mode, **dict(e.labels)}


def continuous_expr(s: Scenario, e: Expectation) -> str:
    """1 when the expected alert fired at every evaluation step from after + within to the end
    (a subquery at the evaluation step over one count: few samples) as exactly one label set (one
    distinct ALERTS series in that range: a relabelled twin makes two)."""
    alerts, window = firing(expect_matchers(e)), continuous_range(s, e)
    step = format_duration(s.evaluation_interval)
    return (f"(min_over_time((count({alerts}) or vector(0))[{window}:{step}]) >= bool 1)\n"
            f"* (count(max_over_time({alerts}[{window}])) == bool 1)")


def continuity_tests(s: Scenario) -> list[dict]:
    """For `rulesgen replay`: per continuous expectation i, each matching series' last firing time and
    its number of firing steps from after + within on (labels last_firing / steps, tagged
    continuous_index="i"), so a resolve or a relabelled twin can be named."""
    tests = []
    step = format_duration(s.evaluation_interval)
    for i, e in enumerate(s.expect):
        if not e.continuous:
            continue
        alerts = firing(expect_matchers(e))
        for expr in (f'count_values without () ("last_firing", max_over_time(timestamp({alerts})[{replay_range(s)}:{step}]))',
                     f'count_values without () ("steps", count_over_time({alerts}[{continuous_range(s, e)}]))'):
            tests.append({"expr": f'label_replace({expr}, "continuous_index", "{i}", "", "")',
                          "eval_time": format_duration(s.duration), "exp_samples": []})
    return tests


def onset_tests(s: Scenario) -> list[dict]:
    """For `rulesgen replay`: per repeated expectation i (repeats), each matching series' first onset
    since its `after` (label onset, tagged repeat_index="i")."""
    tests = []
    for i, e in enumerate(s.expect):
        if not repeats(s, e):
            continue
        expr = f'count_values without () ("onset", {onset_expr(s, firing(expect_matchers(e)), e.after)})'
        tests.append({"expr": f'label_replace({expr}, "repeat_index", "{i}", "", "")',
                      "eval_time": format_duration(s.duration), "exp_samples": []})
    return tests


def unexpected_expr(s: Scenario) -> str:
    window = replay_range(s)
    expected = sorted({e.failure_mode for e in s.expect} - set(s.also_allowed))
    known = "|".join(sorted(set(expected) | set(s.also_allowed)))
    terms = []
    if known:
        terms.append(f'max_over_time(ALERTS{{alertstate="firing", failure_mode!~"{known}"}}[{window}])')
    else:
        terms.append(f'max_over_time(ALERTS{{alertstate="firing"}}[{window}])')
    for fm in expected:
        term = f"max_over_time({firing({'failure_mode': fm})}[{window}])"
        for e in s.expect:
            if e.failure_mode == fm:
                term += f"\n  unless max_over_time({firing({'failure_mode': fm, **dict(e.labels)})}[{window}])"
        terms.append(f"({term})")
    return "\nor ".join(terms)


# What each query of a scenario's test checks (expr_tests): an expectation's first firing, its continuity,
# or that nothing else fired.
FIRST_FIRING, CONTINUOUS, UNEXPECTED = "first_firing", "continuous", "unexpected"


def expr_tests(s: Scenario) -> list[tuple[str, str, Expectation | None]]:
    """(expr, what it checks, the expectation it checks or None) for each query of scenario_test, in order:
    `rulesgen test` reads a failed query back to the expectation it stands for."""
    out: list[tuple[str, str, Expectation | None]] = [(expectation_expr(s, e), FIRST_FIRING, e) for e in s.expect]
    out += [(continuous_expr(s, e), CONTINUOUS, e) for e in s.expect if e.continuous]
    out.append((unexpected_expr(s), UNEXPECTED, None))
    return out


def scenario_test(s: Scenario, rule_files: list[str], group_order: list[str]) -> dict:
    tests = [{"expr": expr, "eval_time": format_duration(s.duration),
              "exp_samples": [] if kind == UNEXPECTED else [{"labels": "{}", "value": 1}]}
             for expr, kind, _ in expr_tests(s)]
    return document(s, rule_files, group_order, tests)


def listing_test(s: Scenario, rule_files: list[str], group_order: list[str]) -> dict:
    """Replay phase 1: every alert series that fired (promtool prints them as the failure's 'got')."""
    expr = f'max_over_time(ALERTS{{alertstate="firing"}}[{replay_range(s)}])'
    return document(s, rule_files, group_order, [{"expr": expr, "eval_time": format_duration(s.duration), "exp_samples": []}])


def per_mode_test(s: Scenario, rule_files: list[str], group_order: list[str], failure_modes: list[str]) -> dict:
    """First firing of every alert series, one query per failure mode (each stays under promtool's
    sample limit while few series of that mode fire); the time travels in a label."""
    tests = [{"expr": f'count_values without () ("first_firing", min_over_time(timestamp({firing({"failure_mode": fm})})'
                      f'[{replay_range(s)}:{format_duration(s.evaluation_interval)}]))',
              "eval_time": format_duration(s.duration), "exp_samples": []} for fm in failure_modes]
    return document(s, rule_files, group_order, tests + continuity_tests(s) + onset_tests(s))


def timing_test(s: Scenario, rule_files: list[str], group_order: list[str], fired: list[dict[str, str]]) -> dict:
    """Replay phase 2: first-firing time of each fired series, carried in a label (promtool prints
    values with two significant digits, labels exactly)."""
    tests = []
    for labels in fired:
        inner = first_firing_expr(s, {k: v for k, v in labels.items() if k != "alertstate"})
        tests.append({"expr": f'count_values("first_firing", {inner})', "eval_time": format_duration(s.duration),
                      "exp_samples": []})
    return document(s, rule_files, group_order, tests)


def document(s: Scenario, rule_files: list[str], group_order: list[str], promql_tests: list[dict],
              key: str = "promql_expr_test") -> dict:
    """group_order lists every group: without it promtool 2.42 evaluates groups in Go map order,
    a different order on each run, and a rule reading another group's output then sees this
    evaluation's value or the previous one by chance. key: the tests' kind (vmalert-tool reads the
    same document with metricsql_expr_test)."""
    return {
        "rule_files": list(rule_files),
        "evaluation_interval": format_duration(s.evaluation_interval),
        "group_eval_order": list(group_order),
        "tests": [{
            "name": s.name,
            "interval": format_duration(s.interval),
            "input_series": [{"series": series, "values": values} for series, values in s.series],
            key: promql_tests,
        }],
    }
