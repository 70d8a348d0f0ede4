"""`roles:` of signals.yaml and metrics.yaml: the names rulesgen's own code reads (rulesgen/model/roles.py),
checked against what the catalog defines; and the record names the code generates, which no signal may take."""
from __future__ import annotations

from ..errors import Collector, Where
from ..load.mapping import Fields, did_you_mean
from ..model import conventions
from ..model.roles import METRIC, RECORD, ROLES

FILES = {RECORD: ("signals.yaml", "signals", "signal"), METRIC: ("metrics.yaml", "metrics", "metric")}


def read_roles(doc, errors: Collector, kind: str, defined: set[str]) -> tuple[dict[str, tuple[str, ...]], Where]:
    """(role -> the names the file declares for it, the position of the file's list key: where a role left
    to its default should be defined). Every declared name must be defined by the file."""
    file, key, what = FILES[kind]
    top = Fields(doc, errors, file)
    node = top.mapping("roles")
    f = Fields(node, errors, f"{file} roles", fallback=top.at("roles"))
    declared: dict[str, tuple[str, ...]] = {}
    for role, spec in ROLES.items():
        if spec.kind != kind or not f.has(role):
            continue
        if spec.many:
            items, wheres = f.list(role)
        else:
            name = f.str(role)
            items, wheres = ([name], [f.at(role)]) if name is not None else ([], [])
        names = []
        for name, w in zip(items, wheres):
            if not isinstance(name, str):
                errors.add(w, "bad-type", f"{file} roles.{role}: a {what} name must be a string, got {name!r}")
            elif name not in defined:
                errors.add(w, f"unknown-{what}", f"{file} roles.{role} ({spec.about}): no {what} {name!r} in {file}"
                           f"{did_you_mean(name, defined)}")
            else:
                names.append(name)
        declared[role] = tuple(names)
    f.done()
    return declared, top.at(key)


def resolve_roles(declared: dict[str, tuple[str, ...]], defined: dict[str, set[str]], should_define: dict[str, Where],
                  needed: dict[str, str], errors: Collector) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Every role's names: as declared, else its defaults the catalog defines. A role the code needs
    (needed: role -> who reads it) and whose default is not defined is an error where it should be."""
    out = []
    for role, spec in ROLES.items():
        if role in declared:
            out.append((role, declared[role]))
            continue
        names = tuple(n for n in spec.default if n in defined[spec.kind])
        reader = "rulesgen" if spec.required else needed.get(role)
        if reader and not names:
            file, key, what = FILES[spec.kind]
            errors.add(should_define[spec.kind], "missing-name",
                       f"{file}: {reader} reads the {what} of role {role!r} ({spec.about}): no {what} "
                       f"{spec.default[0]!r} in {file}; define it, or name another under `roles:` ({role}: NAME)")
        out.append((role, names))
    return tuple(out)


def generated(record: str) -> bool:
    """A record name rulesgen's code writes itself (model and GPU limits, the baseline records)."""
    return (record == conventions.MODEL_GPUS or record in conventions.BASELINE_RECORDS
            or record.startswith((conventions.LIMIT_PREFIX, conventions.GPU_LIMIT_PREFIX)))
