"""rulesgen/errors.py: diagnostics collected from every step, raised together."""
import pytest

from rulesgen.errors import Collector, Diagnostic, RulesgenError, Where


def test_a_collector_raises_what_it_added_and_what_another_step_made_in_order():
    errors = Collector()
    errors.raise_if_any()  # nothing collected: nothing raised
    errors.add(Where("catalog/signals.yaml", 3, 5), "bad-value", "first")
    errors.extend([Diagnostic("catalog/signals.yaml", 9, 1, "template", "second")])
    with pytest.raises(RulesgenError) as raised:
        errors.raise_if_any()
    assert [(d.line, d.col, d.code, d.message) for d in raised.value.diagnostics] == [
        (3, 5, "bad-value", "first"), (9, 1, "template", "second")]
