"""A user's dcgm-exporter counters CSV (`rulesgen list --counters`): the fields it enables."""
from __future__ import annotations


def parse_counters(text: str) -> set[str]:
    """Enabled fields of a dcgm-exporter counters CSV (lines starting with # are comments)."""
    out = set()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.add(line.split(",")[0].strip())
    return out
