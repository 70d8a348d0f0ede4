"""CI's budget table: every step of .ci/run with its seconds, its share of CI's limit and the cumulative time;
exit 1 when the whole run took more than --fail-over seconds, naming the three slowest steps.

usage: ci_budget.py STEPS --total SECONDS [--fail-over SECONDS] [--limit SECONDS]
STEPS has one line per step, as .ci/run's step() writes it: seconds, exit status, the command (tab-separated).
The run's time beyond its steps (installing python3-venv, waiting for the live test) is a row of its own.
Standard library only: .ci/run calls it with the machine's python3, before or without any venv.
"""
import argparse
import sys


def read_steps(text: str) -> list[tuple[int, int, str]]:
    """(seconds, status, command) of each line."""
    rows = []
    for line in text.splitlines():
        if line.strip():
            seconds, status, command = line.split("\t", 2)
            rows.append((int(seconds), int(status), command))
    return rows


def table(steps: list[tuple[int, int, str]], total: int, limit: int) -> list[str]:
    lines = [f"{'seconds':>8} {'share':>6} {'cumulative':>10}  step"]
    other = total - sum(s for s, _, _ in steps)
    rows = [*steps, *([(other, 0, "(outside the steps)")] if other > 0 else [])]
    cumulative = 0
    for seconds, status, command in rows:
        cumulative += seconds
        failed = f"  (failed: exit {status})" if status else ""
        lines.append(f"{seconds:>8} {seconds / limit:>6.1%} {cumulative:>10}  {command}{failed}")
    lines.append(f"{total:>8} {total / limit:>6.1%} {'':>10}  total (limit {limit} s)")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("steps")
    parser.add_argument("--total", type=int, required=True, help="the run's seconds")
    parser.add_argument("--fail-over", type=int, default=4500, help="fail when the run took more (default 4500)")
    parser.add_argument("--limit", type=int, default=5400, help="CI's limit, for the share column (default 5400)")
    args = parser.parse_args(argv)
    with open(args.steps) as f:
        steps = read_steps(f.read())
    print(f"ci: budget ({args.total} s of {args.limit} s; fails over {args.fail_over} s):")
    print("\n".join(table(steps, args.total, args.limit)))
    if args.total <= args.fail_over:
        return 0
    slowest = sorted(steps, key=lambda step: -step[0])[:3]
    print(f"ci: FAILED: the run took {args.total} s, more than {args.fail_over} s (CI_BUDGET_FAIL_S); slowest steps: "
          + ", ".join(f"{command} ({seconds} s)" for seconds, _, command in slowest), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
