"""rulesgen.lock: the one place a GitOps repository records which rulesgen renders its outputs (generated
headers carry no version). `rulesgen init` writes it; `rulesgen render` recreates it when it is missing,
updates it when another version renders, and refuses to render when the installed rulesgen is older than
the pin (unless told to); `rulesgen check` fails without it or under any other version; CI installs it with
`pip install -r rulesgen.lock`.

Its format is its own: comment and blank lines, and one line `dcgm-rulesgen==VERSION`. Any other line (another
requirement, a pip option) is an error at its line: a render rewrites the pin line and keeps the comments, so a
line of another kind would either be dropped or pinned by nobody."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .errors import Diagnostic, RulesgenError

LOCK = "rulesgen.lock"
DISTRIBUTION = "dcgm-rulesgen"  # PyPI's `rulesgen` is another project
_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*(\S+)$")


@cache
def installed() -> tuple[str, str]:
    """(distribution name, version) of the running rulesgen (read once: scanning every installed
    distribution is slow, and the running one does not change)."""
    from importlib import metadata
    names = metadata.packages_distributions().get("rulesgen") or [DISTRIBUTION]
    name = DISTRIBUTION if DISTRIBUTION in names else names[0]  # a venv may still hold the package's old name
    try:
        return name, metadata.version(name)
    except metadata.PackageNotFoundError:  # a source tree without installed metadata
        return DISTRIBUTION, "0+unknown"


def text(name: str, version: str) -> str:
    return ("# The rulesgen that renders this repository's outputs: written by `rulesgen init`, updated by\n"
            "# `rulesgen render`. `rulesgen check` fails under any other version, so teammates and CI render\n"
            "# alike. Install it with: python -m pip install -r rulesgen.lock\n"
            "# Comments and this one pin only: rulesgen refuses any other line.\n"
            f"{name}=={version}\n")


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    line: int  # 1-based line of the pin in the file
    lines: tuple[str, ...]  # the file's lines (a rewrite keeps all but the pin)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _ours(name: str) -> bool:
    return _normal(name) in {_normal(DISTRIBUTION), _normal(installed()[0])}


def read(root: Path) -> Pin | None:
    """The pin of root/rulesgen.lock, None without a lock; RulesgenError naming each line that is not a
    comment, a blank or the one pin of rulesgen."""
    path = root / LOCK
    if not path.is_file():
        return None
    shown = str(path)
    try:
        lines = tuple(path.read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError) as exc:
        raise RulesgenError([Diagnostic(shown, 1, 1, "lock-format", f"{LOCK} cannot be read: {exc}")]) from None
    problems, pin = [], None
    for i, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        col = len(raw) - len(raw.lstrip()) + 1
        m = _REQUIREMENT.match(line)
        if m and _ours(m.group(1)) and pin is None:
            if version_key(m.group(2)) is None:
                problems.append(Diagnostic(shown, i, col + line.index("==") + 2, "lock-format",
                                           f"{m.group(2)!r} is not a version (expected e.g. {DISTRIBUTION}==0.1.0)"))
            else:
                pin = Pin(m.group(1), m.group(2), i, lines)
            continue
        what = ("a second pin of rulesgen" if m and _ours(m.group(1)) else
                f"another requirement ({m.group(1)})" if m else "not a comment nor rulesgen's pin")
        problems.append(Diagnostic(shown, i, col, "lock-format",
                                   f"{line!r}: {what}. {LOCK} holds comments and one line {DISTRIBUTION}==VERSION, which "
                                   "rulesgen rewrites: move pip options to pip.conf or PIP_* variables and other "
                                   "requirements to a file of their own"))
    if pin is None and not problems:
        problems.append(Diagnostic(shown, 1, 1, "lock-format", f"{LOCK} pins no rulesgen: expected a line "
                                                                f"{DISTRIBUTION}==VERSION (`rulesgen render` writes one "
                                                                "when the file is deleted)"))
    if problems:
        raise RulesgenError(problems)
    return pin


def pinned(root: Path) -> tuple[str, str] | None:
    """(name, version) the lock pins, or None without a lock."""
    pin = read(root)
    return (pin.name, pin.version) if pin else None


def write(root: Path, pin: Pin | None = None) -> None:
    """The installed rulesgen as the pin: the pin's line replaced (every other line kept), or a new lock."""
    name, version = installed()
    if pin is None:
        body = text(name, version)
    else:
        lines = list(pin.lines)
        lines[pin.line - 1] = f"{name}=={version}"
        body = "\n".join(lines) + "\n"
    (root / LOCK).write_text(body, encoding="utf-8")


def same(pin: Pin) -> bool:
    """The pin is the installed rulesgen."""
    name, version = installed()
    return _normal(pin.name) == _normal(name) and version_key(pin.version) == version_key(version)


def newer_than_installed(pin: Pin) -> bool:
    """The pin is a later release than the installed rulesgen (a render would downgrade the outputs)."""
    mine, theirs = version_key(installed()[1]), version_key(pin.version)
    return mine is not None and theirs is not None and theirs > mine


# PEP 440 versions (the public part and a local label), ordered as pip orders them.
_VERSION = re.compile(r"""^v?(?:(?P<epoch>\d+)!)?(?P<release>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre_l>alpha|beta|preview|pre|rc|a|b|c)[-_.]?(?P<pre_n>\d+)?)?
    (?:-(?P<post_n1>\d+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>\d+)?)?
    (?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>\d+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?$""", re.X | re.I)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_INF = float("inf")


def version_key(version: str) -> tuple | None:
    """A key that orders PEP 440 versions (1.0.dev1 < 1.0a1 < 1.0 < 1.0.post1 < 1.1); None for another string."""
    m = _VERSION.match(version.strip())
    if not m:
        return None
    release = [int(x) for x in m["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    post = m["post_n1"] or m["post_l"]
    if m["pre_l"]:
        pre = (_PRE[m["pre_l"].lower()], int(m["pre_n"] or 0))
    elif m["dev_l"] and not post:
        pre = (-_INF, 0)
    else:
        pre = (_INF, 0)
    post_key = int(m["post_n1"] or m["post_n2"] or 0) if post else -_INF
    dev = int(m["dev_n"] or 0) if m["dev_l"] else _INF
    local = tuple((1, int(p), "") if p.isdigit() else (0, 0, p.lower()) for p in re.split(r"[-_.]", m["local"] or "") if p)
    return (int(m["epoch"] or 0), tuple(release), pre, post_key, dev, local)
