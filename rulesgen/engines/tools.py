"""Locate the external binaries (promtool, vmalert ...): $RULESGEN_<NAME>, then ./.tools/bin from
`make tools`, then PATH. .tools/bin comes before PATH so that a system promtool 2.x never shadows the
Prometheus 3.5 that `make tools` fetched.

Names: promtool, prometheus (3.5), promtool-2.42, prometheus-2.42 (Debian stable's, the oldest engine
the rules promise), victoria-metrics, vmalert, vmalert-tool (1.145), amtool, alertmanager."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from .. import processes

INSTALL_HINT = ("run `make tools` (fetches the engines into .tools/: rulesgen's own repository from Debian's packages, "
                "a repository `rulesgen init` made from the projects' releases, sha256-checked), or put Prometheus 3.5 and VictoriaMetrics 1.145 on PATH "
                "(RULESGEN_<NAME> overrides one binary, e.g. RULESGEN_PROMTOOL_2_42)")


class ToolMissing(Exception):
    pass


def env_var(name: str) -> str:
    """RULESGEN_PROMTOOL_2_42 for promtool-2.42."""
    return "RULESGEN_" + re.sub(r"[^A-Z0-9]", "_", name.upper())


def _tools_dirs() -> list[Path]:
    """./.tools, then the .tools of the checkout this module runs from (an editable install: rulesgen/engines/
    -> the repository root), so the repository's engines are found from any folder."""
    return [Path.cwd() / ".tools", Path(__file__).resolve().parents[2] / ".tools"]


def find_tool(name: str) -> str:
    env = os.environ.get(env_var(name))
    if env:
        return env
    for d in _tools_dirs():
        c = d / "bin" / name
        if c.exists() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which(name)
    if found:
        return found
    raise ToolMissing(f"{name} not found: {INSTALL_HINT}")


def tool_version(name: str) -> str:
    """The version of a tool: from .tools/versions (the Debian package's version, which `make tools`
    records: Debian's VictoriaMetrics binaries print an empty -version), else from its own --version."""
    path = find_tool(name)
    for d in _tools_dirs():
        if Path(path).parent == d / "bin" and (d / "versions").exists():
            for line in (d / "versions").read_text().splitlines():
                fields = line.split()
                if len(fields) >= 3 and fields[0] == name:
                    return fields[2]
    flag = "-version" if Path(name).name in ("victoria-metrics", "vmalert", "vmalert-tool") else "--version"
    result = processes.run([path, flag], timeout=60)
    m = re.search(r"(?:version |-v)(\d+\.\d+\.\d+\S*)", result.stdout + result.stderr)
    if not m:
        raise ToolMissing(f"{name} ({path}) does not say its version")
    return m.group(1)
