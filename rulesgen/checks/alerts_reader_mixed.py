"""alerts-reader-mixed: a rule that makes Prometheus 3's dependency analysis give up (it reads ALERTS,
or a selector names no metric: engine_fit.serial_reason) shares its group with other rules, so the whole
group is evaluated serially."""
from ..builders.engine_fit import serial_reason
from .base import GROUP, Check, Group


def run(group: Group):
    rules = group.rules
    serial = [(r, why) for r, why in ((r, serial_reason(str(r.get("expr", "")))) for r in rules) if why]
    if serial and len(serial) < len(rules):
        first, why = serial[0]
        yield group.hit(f"{len(serial)} of its {len(rules)} rules make Prometheus 3's dependency analysis give up "
                        f"({first.get('alert') or first.get('record')} {why}), so it evaluates the whole group "
                        "serially; move them to a group of their own")


CHECK = Check("alerts-reader-mixed", "warning", False, "a rule reading ALERTS shares its group with other rules: "
              "Prometheus 3 then evaluates that whole group serially", GROUP, run)
