"""Policy tables the code used to hold, each with its source: xid.yaml `drain:` (the XID classes whose alerts
drain) and a bitmask metric's `bits:` in metrics.yaml (the clock-event bit table the replay dialects use)."""
from __future__ import annotations

from ..load.mapping import Fields, did_you_mean
from ..model.catalog import XID_CLASSES, XID_DRAIN_UNDECLARED, Bit
from .common import unique


def read_xid_drain(doc, errors) -> tuple[str, ...]:
    """xid.yaml `drain:` {classes, source}: which XID classes take the GPU out of service ([[ xid.drain ]]).
    A file without it (written before it existed) keeps XID_DRAIN_UNDECLARED."""
    top = Fields(doc, errors, "xid.yaml")  # its other keys: read_xids
    if not top.has("drain"):
        return XID_DRAIN_UNDECLARED
    f = Fields(top.mapping("drain"), errors, "xid.yaml drain", fallback=top.at("drain"))
    items, wheres = f.list("classes", required=True)
    f.str("source", required=True)
    out, seen = [], {}
    for item, w in zip(items, wheres):
        if item not in XID_CLASSES:
            errors.add(w, "unknown-xid-class", f"xid.yaml drain.classes: {item!r} is not an XID class (one of "
                       f"{', '.join(XID_CLASSES)}){did_you_mean(str(item), XID_CLASSES)}")
        elif item in seen:
            errors.add(w, "duplicate-id", f"xid.yaml drain.classes: {item!r} already listed on line {seen[item].line}")
        else:
            seen[item] = w
            out.append(item)
    f.done()
    return tuple(c for c in XID_CLASSES if c in out)


def read_bits(f: Fields, name: str, unit: str) -> tuple[tuple[Bit, ...], str, str]:
    """A metric's `bits:` {source, label, values: [{value, name, define}]}: the bitmask's bits, by value, the
    table's source and the label (optional) whose values are the bits' names in other series (clock_event of
    DCGM_EXP_CLOCK_EVENTS_*, for bit_matcher()). Only a bitmask has bits; each value is a power of two,
    values and names distinct."""
    if not f.has("bits"):
        return (), "", ""
    if unit != "bitmask":
        f.errors.add(f.at("bits"), "bad-value", f"metric {name}: only a metric of unit bitmask has bits, its unit is {unit!r}")
    bf = Fields(f.mapping("bits"), f.errors, f"metric {name} bits", fallback=f.at("bits"))
    source = bf.str("source", required=True) or ""
    named_by = bf.str("label", default="", pattern=r"[a-zA-Z_][a-zA-Z0-9_]*") or ""
    items, wheres = bf.list("values", required=True)
    bits, values, names = [], {}, {}
    for item, w in zip(items, wheres):
        b = Fields(item, f.errors, f"metric {name} bit", fallback=w)
        value = b.num("value", required=True, integer=True, minimum=1)
        label = b.str("name", required=True, pattern=r"[a-z][a-z0-9_]*")
        define = b.str("define", required=True, pattern=r"[A-Z][A-Z0-9_]*") or ""
        if value is not None and value & (value - 1):
            f.errors.add(b.at("value"), "bad-bit", f"metric {name} bit {label}: value {value} is not a power of two")
        elif value is not None:
            unique(b, "value", value, values, f"metric {name}: bit value {value}")
        if label is not None:
            unique(b, "name", label, names, f"metric {name}: bit name {label!r}")
        b.done()
        if value is not None and label is not None:
            bits.append(Bit(value=value, name=label, define=define, where=w))
    bf.done()
    return tuple(sorted(bits, key=lambda x: x.value)), source, named_by
