"""The comparisons an alert expression makes (`lhs op rhs`), found by a small tokenizer over the
rendered PromQL text: comparisons bind looser than arithmetic and tighter than and/or/unless."""
from __future__ import annotations

import re
from dataclasses import dataclass

SET_OPERATORS = ("and", "or", "unless")
MODIFIERS = ("on", "ignoring", "group_left", "group_right")

_TOKEN = re.compile(r'''(?P<ws>\s+)|(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|(?P<braces>\{[^}]*\})
                       |(?P<range>\[[^\]]*\])|(?P<cmp>==|!=|>=|<=|>|<)|(?P<open>\()|(?P<close>\))
                       |(?P<word>[A-Za-z_:][\w:]*)|(?P<other>.)''', re.X | re.S)


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    start: int
    end: int


def _tokens(expr: str) -> list[_Tok]:
    return [_Tok(m.lastgroup, m.group(), m.start(), m.end()) for m in _TOKEN.finditer(expr) if m.lastgroup != "ws"]


def _is_boundary(tok: _Tok) -> bool:
    """Where a comparison's operand ends at its own depth: a set operator, another comparison, or
    the comma between function arguments."""
    return tok.kind == "cmp" or (tok.kind == "word" and tok.text in SET_OPERATORS) or tok.text == ","


def _skip_modifiers(toks: list[_Tok], i: int, end: int) -> int:
    """Index after `bool`, `on (...)`, `group_left (...)` ... starting at i."""
    while i < end:
        if toks[i].kind == "word" and toks[i].text == "bool":
            i += 1
        elif toks[i].kind == "word" and toks[i].text in MODIFIERS and i + 1 < end and toks[i + 1].kind == "open":
            depth, i = 0, i + 1
            while i < end:
                depth += {"open": 1, "close": -1}.get(toks[i].kind, 0)
                i += 1
                if depth == 0:
                    break
        else:
            break
    return i


def _operand_before(toks: list[_Tok], op: int) -> int:
    """First token of a comparison's left operand: comparisons bind looser than arithmetic and
    tighter than and/or/unless, so the operand runs back to one of those or an open bracket."""
    depth, j = 0, op - 1
    while j >= 0:
        t = toks[j]
        if t.kind == "close":
            depth += 1
        elif t.kind == "open":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and _is_boundary(t):
            break
        j -= 1
    return _skip_modifiers(toks, j + 1, op)


def _operand_after(toks: list[_Tok], op: int) -> tuple[int, int]:
    start = _skip_modifiers(toks, op + 1, len(toks))
    depth, m = 0, start
    while m < len(toks):
        t = toks[m]
        if t.kind == "open":
            depth += 1
        elif t.kind == "close":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and _is_boundary(t):
            break
        m += 1
    return start, m - 1


def comparisons(expr: str) -> list[tuple[str, str, str]]:
    """(lhs, op, rhs) texts of every comparison in expr, in order."""
    toks = _tokens(expr)
    out = []
    for i, tok in enumerate(toks):
        if tok.kind != "cmp":
            continue
        first = _operand_before(toks, i)
        rhs_first, rhs_last = _operand_after(toks, i)
        if first >= i or rhs_last < rhs_first:
            continue
        out.append((expr[toks[first].start:toks[i - 1].end], tok.text, expr[toks[rhs_first].start:toks[rhs_last].end]))
    return out

