"""Several scenario tests in one engine run: the scenarios' series side by side, told apart by a suffix on
the cluster label, each scenario's queries reading its own alerts only.

Both engines' cost is mostly rules x evaluation steps, whatever the data (promtool: 16-20 s of CPU for a
6-hour scenario, most of it with one series), so a run over six small scenarios costs about what the
largest costs alone (measured on this machine: 117 s of promtool CPU apart, 34 s together; vmalert-tool
175 s apart, 94 s together). It holds because every rule is cluster-local (`rulesgen lint`'s
cluster-local, checked on the rendered rules): a rule's result for one cluster is computed from that
cluster's series alone, and no rule selects or rewrites the label, so a scenario whose series carry
`cluster="X~rulesgen-batch-3"` replays in the batch exactly as alone, its alerts relabelled the same way.
A guard query of the batch fails it when an alert carries no scenario's tag.

A batch that fails is replayed file by file, so a failure is reported as the scenario's own run reports
it (and a batch the engine refuses, e.g. a query over promtool's 10,000-sample limit, costs one more run).
"""
from __future__ import annotations

import functools
import itertools
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


import live_rules
from rulesgen.durations import parse_duration
from rulesgen.promql.text import escape, label_set
from rulesgen.render import yamltext

TAG = "~rulesgen-batch-"  # literal in a regex too (no character RE2 or PromQL strings escape)
_ALERTS = re.compile(r"ALERTS\{([^{}]*)\}")
# A batch stops growing at this many scenarios or input samples: a failed batch replays its files one by
# one, the engines' memory grows with the data, and vmalert-tool sends every input in one remote write,
# refused past 32 MB uncompressed (measured: 2,136 series of 8-9 days at 5m, about 5.5 million samples, were
# 34.5 MB, and nothing was ingested). Measured at 4 million (2026-11-30): vmalert-tool took the largest batch
# of the suite (8 scenarios, 3.5 million samples); the sharding proof's four 9-day baseline scenarios (4.0
# million) peaked at 2.55 GB in one promtool and cost 150 s of CPU against 176 s as three batches under 2
# million; over every scenario 17 vmalert-tool batches instead of 20 and 14% fewer rules x steps.
MAX_SCENARIOS, MAX_SAMPLES = 8, 4_000_000
SCENARIO_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"
_HEADER = re.compile(r"^(interval|evaluation_interval|duration): *'?([0-9a-z]+)'?$", re.M)


def tag(k: int) -> str:
    return f"{TAG}{k}"


def untag(labels: dict, label: str = "cluster") -> tuple[int | None, dict]:
    """(the batch member whose tag `label` carries, None if none; the labels as that scenario alone gives
    them: the tag taken off, the label dropped where the scenario had none)."""
    value, _, k = labels.get(label, "").rpartition(TAG)
    if not k.isdigit():
        return None, labels
    return int(k), {key: v for key, v in labels.items() if key != label} | ({label: value} if value else {})


def load(path: Path) -> dict:
    """A test document with its rule files made absolute, so it runs from anywhere (a batch's temp folder)."""
    doc = yamltext.load(Path(path).read_text())
    return {**doc, "rule_files": [str((Path(path).parent / f).resolve()) for f in doc["rule_files"]]}


def tagged_series(text: str, label: str, suffix: str) -> str:
    name, _, rest = text.partition("{")
    labels = label_set("{" + rest) if rest else {}
    labels[label] = labels.get(label, "") + suffix
    return name.strip() + "{" + ", ".join(f'{k}="{escape(v)}"' for k, v in labels.items()) + "}"


def _scoped(expr: str, label: str, suffix: str) -> str:
    """Every ALERTS selector of a query restricted to the scenario's tag (an equality on the label keeps
    its value, tagged)."""
    def one(m: re.Match) -> str:
        inner = re.sub(rf'\b{re.escape(label)}="((?:[^"\\]|\\.)*)"', lambda v: f'{label}="{v.group(1)}{suffix}"', m.group(1))
        return f'ALERTS{{{label}=~".*{suffix}", {inner}}}'
    return _ALERTS.sub(one, expr)


def _key(doc: dict) -> tuple:
    """What scenario tests must share to run as one: rule files, order, both intervals and the query kind."""
    (test,) = doc["tests"]
    kind = next(k for k in test if k.endswith("_expr_test"))
    return (tuple(doc["rule_files"]), tuple(doc.get("group_eval_order") or ()), doc["evaluation_interval"],
            test["interval"], kind)


def merged(docs: list[dict], label: str = "cluster") -> dict:
    """One test document replaying every doc's series and queries, doc i's tagged TAG + i."""
    first = docs[0]
    kind = _key(first)[-1]
    series, queries, end = [], [], 0
    for i, doc in enumerate(docs):
        (test,) = doc["tests"]
        series += [{**s, "series": tagged_series(s["series"], label, tag(i))} for s in test["input_series"]]
        queries += [{**q, "expr": _scoped(q["expr"], label, tag(i))} for q in test[kind]]
        end = max([end, *(parse_duration(str(q["eval_time"])) for q in test[kind])])
    # the guard: an alert of no scenario's tag would escape every scenario's checks
    queries.append({"expr": f'ALERTS{{{label}!~".*{TAG}[0-9]+"}}', "eval_time": f"{end}s", "exp_samples": []})
    return {**{k: v for k, v in first.items() if k != "tests"},
            "tests": [{"name": "batch: " + ", ".join(d["tests"][0].get("name", "?") for d in docs),
                       "interval": first["tests"][0]["interval"], "input_series": series, kind: queries}]}


def _cut(items, key: Callable, length: Callable) -> list[list]:
    """items by key, shortest first (length: (end, samples)), cut at MAX_SCENARIOS or MAX_SAMPLES."""
    out = []
    for _, group in itertools.groupby(sorted(items, key=lambda i: (key(i), length(i))), key=key):
        batch, size = [], 0
        for i in group:
            n = length(i)[1]
            if batch and (len(batch) == MAX_SCENARIOS or size + n > MAX_SAMPLES):
                out.append(batch)
                batch, size = [], 0
            batch.append(i)
            size += n
        out.append(batch)
    return out


def plan(paths: list[Path]) -> list[list[Path]]:
    """The files in batches: those that can share a run (_key), by length then size, cut at MAX_SCENARIOS
    or MAX_SAMPLES; the largest batches first."""
    docs = {p: yamltext.load(Path(p).read_text()) for p in paths}

    def length(p):
        (test,) = docs[p]["tests"]
        end = max(parse_duration(str(q["eval_time"])) for q in test[_key(docs[p])[-1]])
        return end, len(test["input_series"]) * (end // parse_duration(str(test["interval"])) + 1)
    out = _cut(paths, lambda p: _key(docs[p]), length)
    return sorted(out, key=lambda b: -sum(Path(p).stat().st_size for p in b))


def scenario_file(key: str) -> Path:
    """The scenario file a test key names (`name`, or `name@dialect` for a dialect cell)."""
    return SCENARIO_DIR / f"{key.split('@')[0]}.yaml"


@functools.cache
def _header(key: str) -> tuple[tuple, tuple[int, int]]:
    """(intervals, (duration, samples)) of the key's scenario, from its file's header lines (no YAML parse)."""
    path = scenario_file(key)
    if not path.is_file():
        return (), (0, 0)
    text = path.read_text()
    field = {m.group(1): parse_duration(m.group(2)) for m in _HEADER.finditer(text)}
    end, step = field.get("duration", 0), field.get("interval", 60) or 60
    return (field.get("interval"), field.get("evaluation_interval")), (end, text.count("\n- series:") * (end // step + 1))


def groups(keys) -> list[list[str]]:
    """The test keys (scenario names) as the batches plan() would make of their rendered files, estimated from
    the scenario files before any render (conftest marks each group's tests for one pytest-xdist worker)."""
    return _cut(sorted(keys), lambda k: _header(k)[0], lambda k: _header(k)[1])


def filled(chosen, every) -> list[str]:
    """chosen (test keys) and those of every that ride in chosen's batches (groups() above) without adding a
    batch or a batch's steps, shortest first: an engine run's cost is mostly its rules x evaluation steps, so a
    batch's free places cost little (a replay that picks a sample of the scenarios fills them)."""
    def cost(keys):
        cut = groups(keys)
        return len(cut), sum(max(_header(k)[1][0] for k in batch) for batch in cut)
    out, budget = sorted(chosen), cost(chosen)
    for key in sorted(set(every) - set(chosen), key=lambda k: (_header(k)[1], k)):
        if cost([*out, key]) == budget:
            out = sorted([*out, key])
    return out


class Batch(tuple):
    """The keys of one job that returns {key: result} (conftest.Replays reads each key's result from it)."""


def per_batch(paths, job: Callable[[Batch], dict]) -> dict[Batch, Callable[[], dict]]:
    """{stems of a batch: job(those stems)} over plan(paths), for a replay that takes a whole batch at once
    (the sharding proof, the holds; jobs() below runs one engine per file)."""
    keys = [Batch(p.stem for p in batch) for batch in plan([Path(p) for p in paths])]
    return {k: (lambda k=k: job(k)) for k in keys}


def jobs(paths, run: Callable[[Path], tuple], label: str = "cluster") -> dict[Batch, Callable[[], dict]]:
    """{stems of a batch: job}: each job runs the batch (one file or several merged) through run(path), on the
    rules live on its input (tests/live_rules.py), and returns {stem: result} (a result whose first item is
    the return code): the batch's result for each when it passed, else each file's own run, as written."""
    def job(batch: list[Path]) -> dict:
        docs = [load(p) for p in batch]
        folder = Path(tempfile.mkdtemp(prefix="rulesgen-batch-"))  # not beside the files: a render stays as written
        path = folder / f"{batch[0].stem}.yaml"
        live_rules.write_pruned(merged(docs, label) if len(docs) > 1 else docs[0], path)
        together = run(path)
        if together[0] == 0:
            shutil.rmtree(folder)
            return {p.stem: together for p in batch}
        alone = {p.stem: run(p) for p in batch}
        if any(result[0] != 0 for result in alone.values()):
            shutil.rmtree(folder)  # a member fails alone too: its own run says why, the batch nothing more
        else:  # kept: a batch that failed where every member passes alone is the harness's own bug
            path.with_suffix(".failed").write_text(str(together[1]))
        return alone
    return {Batch(p.stem for p in batch): (lambda batch=batch: job(batch)) for batch in plan([Path(p) for p in paths])}
