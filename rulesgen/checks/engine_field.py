"""engine-field: a group field that one of the engines reading plain rule files (README "Engine fit")
rejects, and with it the whole file."""
from ..load.yamlsource import where_of
from .base import GROUP, Check, Group

ENGINES = ("Prometheus 2.42", "Prometheus 3.5", "vmalert 1.145")
# Group fields of a plain rule file and the engines that accept each: a field missing from an engine's
# list makes it reject the whole file.
GROUP_FIELDS = {
    "name": ENGINES, "interval": ENGINES, "limit": ENGINES, "rules": ENGINES,
    "query_offset": ("Prometheus 3.5",),  # Prometheus >= 2.53 (model/rulefmt RuleGroup.QueryOffset)
    "labels": ("Prometheus 3.5", "vmalert 1.145"),  # Prometheus >= 3.0
    **{k: ("vmalert 1.145",) for k in ("eval_delay", "eval_offset", "eval_alignment", "concurrency", "type", "headers",
                                       "notifier_headers", "params", "debug", "tenant")},
}


def run(group: Group):
    for key in group.node if isinstance(group.node, dict) else ():
        engines = GROUP_FIELDS.get(str(key))
        if engines is not None and engines != ENGINES:
            rejecting = [e for e in ENGINES if e not in engines]
            yield group.hit(f"group field {key!r} is accepted only by {', '.join(engines)}: {', '.join(rejecting)} "
                            f"reject the whole file (a plain rule file is read by all of {', '.join(ENGINES)})",
                            where_of(group.node, key))


CHECK = Check("engine-field", "error", False, "a group field some engine reading plain rule files rejects "
              "(query_offset, eval_delay ...)", GROUP, run)
