"""The full PromQL parse: rendered rule files through the real `promtool check rules`, with each
problem mapped back to the catalog line the rule came from."""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

from .. import processes
from ..errors import Diagnostic
from ..model.output import RuleSet
from ..render.prometheus import render_rule_file

_PROBLEM = re.compile(r'group "(?P<group>[^"]+)", rule (?P<index>\d+), "(?P<name>[^"]*)": (?P<message>.*)$')


def promtool_problems(rules: RuleSet, promtool: str) -> list[Diagnostic]:
    by_position = {(g.name, i + 1): r for f in rules.files for g in f.groups for i, r in enumerate(g.rules)}
    with tempfile.TemporaryDirectory(prefix="rulesgen-check-") as tmp:
        paths = []
        for f in rules.files:
            path = Path(tmp, Path(f.path).name)
            path.write_text(render_rule_file(f))
            paths.append(str(path))
        proc = processes.run([promtool, "check", "rules", *paths], timeout=120)
    if proc.returncode == 0:
        return []
    problems = []
    for line in (proc.stdout + proc.stderr).splitlines():
        m = _PROBLEM.search(line)
        if not m:
            continue
        rule = by_position.get((m["group"], int(m["index"])))
        where = rule.source if rule is not None and rule.source is not None else None
        path, row, col = (where.path, where.line, where.col) if where else ("<rendered rules>", 1, 1)
        problems.append(Diagnostic(path, row, col, "promql-parse", f"{m['name']}: promtool: {m['message']}"))
    if not problems:
        problems.append(Diagnostic("<rendered rules>", 1, 1, "promtool", (proc.stdout + proc.stderr).strip()[-500:]))
    return problems
