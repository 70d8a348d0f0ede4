"""The live trip's settings (the module doc of test_live.py says why each differs from its default),
the binaries (filled by test_live.py's fixture from conftest's) and its log."""
from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "live-latency.md"
INTERVAL = 5                     # scrape and evaluation interval of the test's rulesgen.yaml (seconds)
# The test's rulesgen.yaml also shortens (module doc): keep_firing_for (default 5m), exporter_down's `for`
# (5m) and gpu_lost's stale_seconds (120: 4 of the exporter's default 30 s collections; 4 of this exporter's 5 s)
HOLD, DOWN_FOR, STALE = 90, 60, 20
# Alertmanager runs the rendered group_wait (30 s, a page's 10 s); only group_interval is shortened (test only,
# see the module doc): with the rendered 5m no RESOLVED could be told apart from its absence in a short test
AM_TEST_TIMINGS = {"group_interval": "10s"}
GROUP_INTERVAL = 10
TARGETS = ROOT / "benchmarks" / "latency_targets.yaml"   # the class targets the trip asserts, fault to webhook
TRAINING, INFERENCE, IDLE = "gpu-h100-a01", "inf-l40s-03", "gpu-h100-b07"
BAD_GPU = 3                      # the training node's GPU that gets the DBE, then falls off the bus
ABORT = threading.Event()       # set when the session is interrupted: every script stops at its next poll
ENGINES = tuple(os.environ.get("RULESGEN_LIVE_ENGINES", "prometheus,victoriametrics").split(","))


TOOLS: dict[str, str] = {}  # tool name -> path, from conftest's fixtures (a missing one fails the test)


def log(engine: str, msg: str) -> None:
    print(f"[live {time.strftime('%H:%M:%S')} {engine}] {msg}", file=sys.stderr, flush=True)
