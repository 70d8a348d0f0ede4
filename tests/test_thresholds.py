"""Rules as trees, built once: a threshold renders as its placeholder (rulesgen/model/thresholds.py),
build_rules renders each template once and writes the values in place, and the built rule keeps where each
threshold stands (Rule.template_expr). The dashboards read their comparisons from the built rules and the
job records from build_rules' own renderings: no template is rendered a second time. No engine needed."""
from pathlib import Path

import pytest

from rulesgen.artifacts import load_inputs
from rulesgen.builders import templates
from rulesgen.builders.dashboards.context import Context
from rulesgen.builders.dashboards.reading import alert_reading
from rulesgen.builders.rules import build_rules, job_signal_records
from rulesgen.catalog import bundled_catalog_dir
from rulesgen.errors import Collector, Where
from rulesgen.load import jobmetrics, template_syntax
from rulesgen.load.template_syntax import WindowRange
from rulesgen.model.thresholds import PLACEHOLDER_PREFIX, Marked, ThresholdValue, numeric
from rulesgen.promql import tree as promql_tree

# What job_signal_records found for the bundled catalog when it rendered every signal a second time.
BUNDLED_JOB_RECORDS = {
    "gpu:ghost_loss:minutes", "gpu:hardware_alert:timestamp", "gpu:training_job:info", "job:training_loss:median",
    "job:training_loss:median_15m", "job:training_loss_improvement:recent", "job:training_loss_new_steps:median",
    "job:training_loss_problem:since", "job:training_loss_problem:timestamp", "job:training_loss_rise_15m:ratio",
    "job:training_loss_vs_best:ratio", "job:training_step:cv", "job:training_step:median", "rank:training_loss:finite",
    "rank:training_step:seconds", "rank:training_step:zscore", "rank:training_step_vs_job:ratio"}
OVERRIDES = ("failure_modes:\n  memory_bandwidth_bound:\n    thresholds: {dram_active: 0.65}\n"
             "  loss_divergence:\n    thresholds: {ratio: 1.75}\n")


def _built(config: Path | None = None):
    catalog, settings = load_inputs(bundled_catalog_dir(), config)
    return catalog, settings, build_rules(catalog, settings)


@pytest.fixture(scope="module")
def bundled():
    return _built()


@pytest.fixture(scope="module")
def overridden(tmp_path_factory):
    config = tmp_path_factory.mktemp("thresholds") / "rulesgen.yaml"
    config.write_text(OVERRIDES)
    return _built(config)


def _placed(marked: Marked) -> list[tuple[str, ThresholdValue]]:
    """(operator, threshold) for each comparison of the marked tree whose right side is a threshold's place."""
    out = []
    for c in promql_tree.comparisons(marked.tree):
        alone = promql_tree.wrapped_series(c.rhs)
        threshold = marked.threshold_at(alone.selector) if alone else None
        if threshold:
            out.append((c.op, threshold))
    return out


def _alert(rules, fm_id: str):
    return next(r for r in rules.rules if r.alert and r.failure_mode == fm_id)


def _numbers(tree) -> set[float]:
    return {promql_tree.number(c.rhs) for c in promql_tree.comparisons(tree)} - {None}


def test_the_built_alert_keeps_each_thresholds_place_in_its_tree(bundled):
    rule = _alert(bundled[2], "memory_bandwidth_bound")
    assert _placed(rule.template_expr) == [(">", ThresholdValue("memory_bandwidth_bound", "dram_active", 0.8)),
                                           ("<", ThresholdValue("memory_bandwidth_bound", "sm_active", 0.3))]
    assert {0.8, 0.3} <= _numbers(rule.tree)  # the written rule: each value at its threshold's place
    assert not {s.name for s in promql_tree.selectors(rule.tree)} & {t.placeholder for t in rule.template_expr.thresholds}


def test_an_override_changes_the_value_and_keeps_the_thresholds_name(overridden):
    catalog, settings, rules = overridden
    rule = _alert(rules, "memory_bandwidth_bound")
    assert _placed(rule.template_expr)[0] == (">", ThresholdValue("memory_bandwidth_bound", "dram_active", 0.65))
    assert 0.65 in _numbers(rule.tree) and 0.8 not in _numbers(rule.tree)
    reading = alert_reading(Context.of(catalog, settings, rules), catalog.failure_mode("memory_bandwidth_bound"))
    by_name = {c.threshold.name: c for c in reading.comparisons if c.threshold}
    assert (by_name["dram_active"].op, by_name["dram_active"].value) == (">", 0.65)
    assert (by_name["sm_active"].op, by_name["sm_active"].value) == ("<", 0.3)
    assert by_name["dram_active"].alert == rule.alert


def test_a_recording_rule_keeps_another_modes_threshold(bundled, overridden):
    """signals.yaml reads jobs modes' thresholds ([[ thresholds.MODE.NAME ]]): the rule knows which."""
    for (_, _, rules), value in ((bundled, 1.2), (overridden, 1.75)):
        rule = next(r for r in rules.rules if r.record == "job:training_loss_problem:timestamp")
        assert (">", ThresholdValue("loss_divergence", "ratio", value)) in _placed(rule.template_expr)
        assert value in _numbers(rule.tree)


def test_the_dashboards_read_the_built_rules_without_rendering(bundled, monkeypatch):
    catalog, settings, rules = bundled
    ctx = Context.of(catalog, settings, rules)

    def no_rendering(*args, **kwargs):
        raise AssertionError("a template rendered a second time")
    monkeypatch.setattr(template_syntax, "render", no_rendering)
    monkeypatch.setattr(templates, "render", no_rendering)
    inactive = dict(rules.inactive)
    readings = {fm.id: alert_reading(ctx, fm) for fm in catalog.failure_modes if fm.id not in inactive}
    gpu_lost = readings["gpu_lost"]
    assert [c.threshold.name for c in gpu_lost.comparisons if c.threshold] and all(
        c.value == ctx.threshold_values(catalog.failure_mode("gpu_lost"))[c.threshold.name]
        for c in gpu_lost.comparisons if c.threshold)
    assert all(r.template_expr is not None for r in rules.rules if r.alert)


def test_template_filters_read_a_thresholds_value(bundled):
    _, settings, _ = bundled
    window, ratio = ThresholdValue("m", "window", 86400.0), ThresholdValue("m", "ratio", 0.25)
    assert (numeric(window), numeric(WindowRange(600)), numeric("5")) == (86400.0, 600.0, 5.0)
    context = {"t": {"window": window, "ratio": ratio}, "jm": jobmetrics.context(settings)}
    errors = Collector()
    text = template_syntax.render("avg_over_time(x[[ t.window | window ]] offset [[ t.window | duration ]]) > [[ t.ratio ]]"
                                  " and y offset [[ jm.duration(t.window) ]]", context, Where("test"), errors, "test")
    assert errors.items == []
    marked = Marked.of(text, [window, ratio])
    assert marked.thresholds == (ratio,)  # the window became a range: no comparison's place
    assert promql_tree.windows(marked.tree) == (86400,)
    assert {s.offset for s in promql_tree.selectors(marked.tree) if s.name in ("x", "y")} == {86400}
    assert _placed(marked) == [(">", ratio)] and _numbers(promql_tree.parse(marked.filled())) == {0.25}
    helpers = context["jm"]
    assert (helpers["evaluations"](window), helpers["samples"](window, ratio)) == (
        helpers["evaluations"](86400), helpers["samples"](86400, 0.25))


def test_job_signal_records_read_build_rules_renderings(bundled, tmp_path):
    catalog, _, rules = bundled
    rendered = {r.record: r.expr for r in rules.rules if r.record}
    assert job_signal_records(catalog, rendered) == BUNDLED_JOB_RECORDS
    config = tmp_path / "rulesgen.yaml"
    config.write_text("job_metrics: {enabled: false}\n")
    _, _, without = _built(config)
    assert not {r.record for r in without.rules if r.record} & BUNDLED_JOB_RECORDS


def test_no_placeholder_reaches_a_written_rule(bundled, overridden):
    for _, _, rules in (bundled, overridden):
        for r in rules.rules:
            assert all(PLACEHOLDER_PREFIX not in text for text in (r.expr, *dict(r.annotations).values())), r.record or r.alert
