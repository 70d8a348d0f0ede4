"""template-label: a label an alert's annotation or label templates read (`$labels.X`, `index $labels "X"`,
`.Labels.X`) is one its expression can carry (Rule.alert_carries, as alert-identity reads it) or one of its own
static labels. Otherwise the text renders empty: "XID  on GPU 0" once `xid` left the aggregation.

`.Labels` is the alert's only where dot is the template's data, outside `with` and `range` (inside them it
is what they bound: `{{ range query "..." }}{{ .Labels.X }}` reads the query's series). A variable given
$labels (`$job := $labels`) is not followed."""
from __future__ import annotations

import re

from ..load.yamlsource import where_of
from .base import RULE, Check, Rule

_NAME = r"[a-zA-Z_][a-zA-Z0-9_]*"
_VARIABLE = re.compile(r"\$labels\.(" + _NAME + ")")
_FIELD = re.compile(r"(?<![\w.)\]$])\.Labels\.(" + _NAME + ")")
_INDEX = re.compile(r"\bindex\s+(\$labels|\.Labels)\s+\"(" + _NAME + ")\"")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|`[^`]*`')
_REBINDS_DOT = ("with", "range", "define", "block")
_BLOCKS = ("if",) + _REBINDS_DOT


def actions(text: str) -> list[str]:
    """The actions of a Go template, `{{ ... }}` with trim markers dropped; a `}}` inside a quoted string
    does not end one."""
    out, i = [], 0
    while (start := text.find("{{", i)) >= 0:
        j, quote = start + 2, ""
        while j < len(text) and (quote or not text.startswith("}}", j)):
            ch = text[j]
            if quote and ch == "\\" and quote == '"':
                j += 1
            elif quote and ch == quote:
                quote = ""
            elif not quote and ch in "\"`":
                quote = ch
            j += 1
        body = re.sub(r"\s-$", "", re.sub(r"^-\s", "", text[start + 2:j].strip())).strip()
        out.append(body)
        i = j + 2
    return out


def labels_used(text: str) -> list[str]:
    """The alert labels a template reads, in order of first use."""
    used: list[str] = []
    blocks: list[str] = []
    for body in actions(text):
        if body.startswith("/*"):
            continue
        word = body.split(None, 1)[0] if body else ""
        if word == "end":
            blocks = blocks[:-1]
            continue
        own_dot = not any(b in _REBINDS_DOT for b in blocks)
        bare = _STRING.sub('""', body)
        used += _VARIABLE.findall(bare) + (_FIELD.findall(bare) if own_dot else [])
        used += [name for holder, name in _INDEX.findall(body) if holder == "$labels" or own_dot]
        if word in _BLOCKS:
            blocks.append(word)
    return list(dict.fromkeys(used))


def run(rule: Rule):
    if "alert" not in rule.node or rule.tree is None or rule.alert_carries.open:
        return
    static = rule.node.get("labels") or {}
    known = rule.alert_carries.known
    for section in ("labels", "annotations"):
        templates = rule.node.get(section) or {}
        if not isinstance(templates, dict):
            continue
        for key, value in templates.items():
            missing = [name for name in labels_used(str(value)) if name not in known and name not in static]
            if missing:
                keeps = ", ".join(sorted(known)) or "no label"
                yield rule.hit(f"{section}.{key} reads {', '.join('$labels.' + m for m in missing)}, which the alert "
                               f"cannot carry (its expression keeps {keeps}; no static label of that name): it "
                               "renders empty", where_of(templates, key))


CHECK = Check("template-label", "error", False,
              "an alert's templates read only labels its expression can carry or it sets itself", RULE, run)
