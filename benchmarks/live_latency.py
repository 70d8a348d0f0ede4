"""Latency to a human, live: prints the last result of `make test-live` (benchmarks/results/live-latency.md,
written by tests/live/test_live.py), per step and engine the seconds from a fault on a synthetic
dcgm-exporter to the webhook Alertmanager called. `make bench` prints it beside the promtool latency
table; it does not run the live test (about 20 minutes): `--run` does, then prints the new result."""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "live-latency.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="store_true", help="run `make test-live` first (about 20 minutes)")
    args = parser.parse_args()
    if args.run:
        code = subprocess.call(["make", "-C", str(ROOT), "test-live"])
        if code:
            print(f"make test-live failed ({code}); the table below is what it measured", file=sys.stderr)
    if not RESULTS.exists():
        print(f"no live latency yet: run `make test-live` (writes {RESULTS.relative_to(ROOT)})")
        return 0 if not args.run else 1
    print(RESULTS.read_text(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
