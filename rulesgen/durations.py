"""Time as Prometheus and its tools write it: durations (`1h30m`, in rule files, catalog and
settings) and RFC 3339 instants (the flags of promtool and vmalert)."""
from __future__ import annotations

import re
import time

_DURATION = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?(?:(\d+)ms)?$")


def parse_duration(text: str) -> int | None:
    """Prometheus duration (e.g. 1h30m, 90s, 0s) -> seconds; None when malformed."""
    if not isinstance(text, str) or not text:
        return None
    m = _DURATION.match(text)
    if not m or not any(m.groups()):
        return None
    d, h, mi, s, ms = (int(g) if g else 0 for g in m.groups())
    if ms:
        return None  # sub-second durations make no sense for rule files
    return d * 86400 + h * 3600 + mi * 60 + s


def duration_seconds(text: str) -> int:
    """parse_duration, with a ValueError that says what was expected."""
    seconds = parse_duration(text)
    if seconds is None:
        raise ValueError(f"{text!r} is not a duration like 30s, 5m, 1h30m")
    return seconds


def format_duration(seconds: int) -> str:
    if seconds == 0:
        return "0s"
    out = ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            out += f"{seconds // size}{unit}"
            seconds %= size
    return out


def rfc3339(t: int) -> str:
    """Unix seconds -> 2024-05-01T00:00:00Z."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
