"""Property tests: mutated catalogs and configs end in diagnostics, never in a traceback."""
import random
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import MINIMAL_CATALOG
from rulesgen.artifacts import plan
from rulesgen.errors import RulesgenError

NOISE = st.text(alphabet=string.printable, max_size=12)


def mutate(text: str, seed: int, junk: str) -> str:
    rng = random.Random(seed)
    lines = text.splitlines()
    i = rng.randrange(len(lines))
    op = rng.randrange(5)
    if op == 0:
        lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)] + junk
    elif op == 1:
        del lines[i]
    elif op == 2:
        lines.insert(i, lines[rng.randrange(len(lines))])
    elif op == 3 and ":" in lines[i]:
        key, _, _ = lines[i].partition(":")
        lines[i] = f"{key}: {junk!r}"
    else:
        lines[i] = " " * rng.randrange(6) + lines[i].lstrip()
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(MINIMAL_CATALOG)), seed=st.integers(0, 10**6), junk=NOISE)
@example(name="failure_modes.yaml", seed=194, junk="A")  # an alert and its panel read one wrong name
def test_mutated_catalog_never_tracebacks(tmp_path_factory, name, seed, junk):
    d = tmp_path_factory.mktemp("cat")
    for n, text in MINIMAL_CATALOG.items():
        (d / n).write_text(mutate(text, seed, junk) if n == name else text)
    try:
        plan(d, None, None)
    except RulesgenError as exc:
        assert exc.diagnostics
        for diag in exc.diagnostics:
            assert diag.path.endswith(".yaml") and diag.line >= 1 and diag.code


CONFIG = """\
selector: 'job="dcgm"'
labels:
  host: hostname
  cluster: cluster
profiling: false
evaluation_interval: 1m
urls:
  runbook_base: https://example.com/runbooks/
extra_labels:
  team: gpu
groups:
  efficiency: {enabled: false}
failure_modes:
  hot_gpu:
    for: 10m
    thresholds: {celsius: 90}
    severity: {warning: critical}
"""


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), junk=NOISE)
@example(seed=89169, junk="INF")  # host: 'INF', a label name promtool cannot group by
def test_mutated_config_never_tracebacks(tmp_path_factory, minimal_catalog_dir, seed, junk):
    d = tmp_path_factory.mktemp("cfg")
    cfg = d / "rulesgen.yaml"
    cfg.write_text(mutate(CONFIG, seed, junk))
    try:
        plan(minimal_catalog_dir, cfg, None)
    except RulesgenError as exc:
        assert exc.diagnostics
        assert all(diag.path == str(cfg) for diag in exc.diagnostics)


@pytest.fixture(scope="module")
def minimal_catalog_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("minimal")
    for n, text in MINIMAL_CATALOG.items():
        (d / n).write_text(text)
    return Path(d)
