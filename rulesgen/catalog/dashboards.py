"""dashboards.yaml: the hand-made dashboard panels and rows, and the failure modes and thresholds they read."""
from __future__ import annotations

import re

from ..load import template_syntax
from ..load.mapping import Fields, did_you_mean
from ..model.catalog import FailureMode, HandMadePanel, PanelText
from ..model.panels import ALWAYS_TEXTS, PANELS, ROW, TEXT_KEYS, TEXTS, TITLE_KEY
from ..model.words import CATALOG_TITLE_MAX, title_problem
from .common import top_list


def read_dashboards(doc, errors, modes: list[FailureMode]) -> list[HandMadePanel]:
    """catalog/dashboards.yaml: each entry names a panel builder rulesgen knows, the failure mode it reads, the
    thresholds of that mode it draws (by the builder's role for each) and the modes whose alerts it shows."""
    items, wheres = top_list(doc, "panels", errors, "dashboards.yaml", also=("texts",))
    by_id = {m.id: m for m in modes}
    out, seen, rows = [], {}, {}
    for item, w in zip(items, wheres):
        f = Fields(item, errors, "dashboards.yaml panel", fallback=w)
        panel = f.str("panel", required=True) or "?"
        f.what = f"dashboards.yaml panel {panel}"  # the keys' errors name the panel
        spec = PANELS.get(panel)
        if panel != "?" and spec is None:
            errors.add(f.at("panel"), "unknown-panel",
                       f"dashboards.yaml: rulesgen has no hand-made panel {panel!r}{did_you_mean(panel, PANELS)}"
                       f" (known: {', '.join(PANELS)})")
        if panel in seen:
            errors.add(f.at("panel"), "duplicate-id", f"dashboards.yaml: panel {panel} already declared on line {seen[panel].line}")
        seen[panel] = f.at("panel")
        fm_id = f.str("failure_mode", required=True) or "?"
        fm = _mode(fm_id, f.at("failure_mode"), panel, by_id, errors)
        if spec is not None and spec.kind == ROW and fm is not None:
            if fm_id in rows:
                errors.add(f.at("failure_mode"), "duplicate-id",
                           f"dashboards.yaml: failure mode {fm_id} already has a hand-made row (line {rows[fm_id].line})")
            rows[fm_id] = f.at("failure_mode")
        thresholds = _thresholds(f, panel, spec, fm, errors)
        alerts_of = []
        if spec is None or spec.alerts_of:  # a builder that shows no other mode's alerts: alerts_of is an unknown key
            a_items, a_wheres = f.list("alerts_of", required=spec is not None)
            for name, aw in zip(a_items, a_wheres):
                if _mode(name, aw, panel, by_id, errors) is not None:
                    alerts_of.append(name)
        out.append(HandMadePanel(panel=panel, failure_mode=fm_id, thresholds=thresholds, alerts_of=tuple(alerts_of),
                                 where=f.at("panel")))
        f.done()
    return out


def read_texts(doc, errors, panels: list[HandMadePanel]) -> tuple[PanelText, ...]:
    """dashboards.yaml `texts:` {id: {shows, normal, do}}: the descriptions of the panels drawn by code, each
    a template of the placeholders its builder fills (panel_specs.TEXTS). A file with `texts:` gives one for
    each panel drawn (ALWAYS_TEXTS, and the declared panels' own) and no other; a file without it (written
    before it existed) draws those panels without a description."""
    top = Fields(doc, errors, "dashboards.yaml")
    if not top.has("texts"):
        return ()
    node = top.mapping("texts")
    needed = [*ALWAYS_TEXTS]
    for p in panels:
        spec = PANELS.get(p.panel)
        own = (p.panel,) if p.panel in TEXTS else ()
        needed += [t for t in own + (spec.texts if spec else ()) if t not in needed]
    tf = Fields(node, errors, "dashboards.yaml texts", fallback=top.at("texts"))
    out = []
    for text_id in list(node or ()):
        if text_id not in TEXTS:
            errors.add(tf.at(text_id), "unknown-text", f"dashboards.yaml texts: rulesgen draws no panel text "
                       f"{text_id!r}{did_you_mean(str(text_id), TEXTS)}")
        elif text_id not in needed:
            errors.add(tf.at(text_id), "unused-text", f"dashboards.yaml texts: {text_id} is the text of a panel "
                       f"this file does not declare (panels:); it is drawn nowhere")
        tf.seen.add(text_id)
        f = Fields(node[text_id], errors, f"dashboards.yaml text {text_id}", fallback=tf.at(text_id))
        values = {}
        for key in TEXT_KEYS:
            text = f.str(key, required=True) or ""
            values[key] = text
            _check_placeholders(text, f.at(key), text_id, key, errors)
        title = f.str(TITLE_KEY, default="") or ""
        _check_placeholders(title, f.at(TITLE_KEY), text_id, TITLE_KEY, errors)
        problem = title and title_problem(re.sub(r"\[\[.*?\]\]|\[%.*?%\]", "x", title), CATALOG_TITLE_MAX)
        if problem:
            errors.add(f.at(TITLE_KEY), "bad-title", f"dashboards.yaml text {text_id} title {title!r}: {problem}")
            title = ""
        values[TITLE_KEY] = title
        f.done()
        out.append(PanelText(id=str(text_id), where=tf.at(text_id), **values))
    for text_id in needed:
        if text_id not in node:
            drawn = "always" if text_id in ALWAYS_TEXTS else "declared under panels:"
            errors.add(top.at("texts"), "missing-text",
                       f"dashboards.yaml texts: no text {text_id!r} (the description of a panel drawn: {drawn})")
    return tuple(out)


def _check_placeholders(text, where, text_id, key, errors) -> None:
    """A text reads only the placeholders its builder fills: a typo is a load error on its line."""
    if not text:
        return
    message = template_syntax.syntax_error(text)
    if message:
        errors.add(where, "template-syntax", f"dashboards.yaml text {text_id} {key}: {message}")
        return
    known = TEXTS.get(text_id, ())
    for name in sorted(template_syntax.placeholders(text) or ()):
        if name not in known:
            errors.add(where, "unknown-placeholder",
                       f"dashboards.yaml text {text_id} {key}: [[ {name} ]] is not a value of this panel"
                       f"{did_you_mean(name, known)} (known: {', '.join(known) or 'none'})")


def _mode(name, where, panel, by_id, errors) -> FailureMode | None:
    if not isinstance(name, str):
        errors.add(where, "bad-type", f"dashboards.yaml: panel {panel}: a failure mode id must be a string, got {name!r}")
        return None
    if name in by_id:
        return by_id[name]
    if name != "?":
        errors.add(where, "unknown-failure-mode",
                   f"dashboards.yaml: panel {panel} reads failure mode {name!r}: not in failure_modes.yaml"
                   f"{did_you_mean(str(name), list(by_id))}")
    return None


def _thresholds(f: Fields, panel, spec, fm, errors) -> tuple[tuple[str, str], ...]:
    """(role, threshold name) for each role the builder draws: every role given, each a threshold of fm."""
    node = f.mapping("thresholds")
    tf = Fields(node, errors, f"panel {panel} thresholds", fallback=f.at("thresholds"))
    out = []
    for role in spec.roles if spec is not None else list(node):
        name = tf.str(role, required=True)
        if name is None:
            continue
        known = [t.name for t in fm.thresholds] if fm is not None else []
        if fm is not None and name not in known:
            errors.add(tf.at(role), "unknown-threshold",
                       f"dashboards.yaml: panel {panel} reads threshold {name!r} of failure mode {fm.id}: no such "
                       f"threshold{did_you_mean(name, known)} (known: {', '.join(known) or 'none'})")
        out.append((role, name))
    tf.done()
    return tuple(out)
