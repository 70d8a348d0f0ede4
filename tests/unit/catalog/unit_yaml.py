"""Shared by the catalog loader unit tests: a small YAML file written to tmp_path and parsed with rulesgen's
own YAML reader (positions kept), and the diagnostics a loader collected, as printed."""
from __future__ import annotations

from pathlib import Path

from rulesgen.errors import Collector
from rulesgen.load.yamlsource import load_file


def written(tmp_path: Path, name: str, text: str):
    """(the file's path as diagnostics print it, its parsed document)."""
    path = tmp_path / name
    path.write_text(text)
    return str(path), load_file(path)


def printed(errors: Collector) -> list[str]:
    """Every diagnostic collected, sorted by file:line:col, as `rulesgen` prints it."""
    return [str(d) for d in sorted(errors.items)]
