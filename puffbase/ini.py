"""PufferLib-style ini files, read once for envs and trainer alike.

    [section]
    ; a comment line right above a key describes it (the trainer's --help shows it)
    key = value          ; or key: value, with an optional trailing ; or # comment

Values: ints and floats (with _ digit separators), true/false, else text; quotes around a value
are dropped, as PufferLib does. Keys are case-sensitive. A later section or key of the same name
adds to or replaces the earlier one. A line that is none of these is an IniError naming the file
and the line number.
"""
from __future__ import annotations

import re
from pathlib import Path

_SECTION = re.compile(r"\[\s*([\w.-]+)\s*\]")
_KEY = re.compile(r"([\w.-]+)\s*[=:]\s*(.*?)\s*(?:[;#].*)?")


class IniError(ValueError):
    pass


def parse_value(text):
    """PufferLib ini values: ints and floats (with _ digit separators), true/false, else a string."""
    t = text.strip()
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(t.replace("_", ""))
    except ValueError:
        pass
    try:
        return float(t.replace("_", ""))
    except ValueError:
        return t


def unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] in "'\"" and text[-1] == text[0]:
        return text[1:-1]
    return text


def read_ini_described(path) -> tuple[dict, dict]:
    """({section: {key: value}}, {(section, key): description}): a key's description is the
    comment line(s) right above it."""
    values, desc = {}, {}
    section, comment = None, []
    for lineno, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line:
            comment = []
            continue
        if line[0] in ";#":
            comment.append(line[1:].strip())
            continue
        m = _SECTION.fullmatch(line)
        if m:
            section, comment = m.group(1), []
            values.setdefault(section, {})
            continue
        m = _KEY.fullmatch(line)
        if not m or section is None:
            why = "a key before any [section]" if m else "not a [section], key = value or ; comment"
            raise IniError(f"{path}:{lineno}: cannot parse {raw.strip()!r} ({why})")
        key = m.group(1)
        values[section][key] = parse_value(unquote(m.group(2)))
        if comment:
            desc[(section, key)] = " ".join(comment)
        comment = []
    return values, desc


def read_ini(path) -> dict:
    """{section: {key: value}} of a PufferLib-style ini file ([base], [vec], [env], [train], ...)."""
    return read_ini_described(path)[0]
