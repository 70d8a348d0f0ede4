"""alerts-reader-mixed: a rule that makes Prometheus 3's dependency analysis give up (it reads ALERTS,
or a selector names no metric: engine_fit.serial_reason) shares its group with rules that have nothing
to do with it, so they are evaluated serially for nothing. Rules linked to it by reads within the group
(what it reads, what reads it, and so on) belong with it: in another group each such read would be up to
one evaluation old (engine_fit's module doc)."""
from types import SimpleNamespace

from ..builders.engine_fit import neighbours, related_pairs, serial_reason
from .base import GROUP, Check, Group


def _view(rule) -> SimpleNamespace:
    return SimpleNamespace(expr=str(rule.get("expr", "")), record=rule.get("record"), alert=rule.get("alert"),
                           labels=tuple((str(k), str(v)) for k, v in (rule.get("labels") or {}).items()))


def run(group: Group):
    rules = group.rules
    serial = [(k, why) for k, why in ((k, serial_reason(str(r.get("expr", "")))) for k, r in enumerate(rules)) if why]
    if not serial or len(serial) == len(rules):
        return
    near = neighbours(related_pairs([_view(r) for r in rules]), len(rules))
    linked, todo = {k for k, _ in serial}, [k for k, _ in serial]
    while todo:
        for other in near[todo.pop()] - linked:
            linked.add(other)
            todo.append(other)
    unlinked = [r for k, r in enumerate(rules) if k not in linked]
    if unlinked:
        first, why = rules[serial[0][0]], serial[0][1]
        yield group.hit(f"{len(serial)} of its {len(rules)} rules make Prometheus 3's dependency analysis give up "
                        f"({first.get('alert') or first.get('record')} {why}), so it evaluates the whole group "
                        f"serially, and {len(unlinked)} other rule{'s' if len(unlinked) > 1 else ''} (first "
                        f"{unlinked[0].get('alert') or unlinked[0].get('record')}) neither read them nor are read by them; "
                        "move those to a group of their own")


CHECK = Check("alerts-reader-mixed", "warning", False, "a rule reading ALERTS shares its group with rules unrelated "
              "to it: Prometheus 3 then evaluates those serially for nothing", GROUP, run)
