"""Java ``.properties`` files, as Kafka's ``server.properties`` is written.

Lines are ``key=value``, ``key: value`` or ``key value``; ``#`` and ``!`` start comments; a line ending in an odd
number of backslashes continues on the next; ``\\t \\n \\r \\f \\uXXXX`` and escaped separators are unescaped.
"""

from __future__ import annotations

from pathlib import Path

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesError(ValueError):
    """A properties file that cannot be read, naming the file and line."""


def _logical_lines(text: str) -> list[tuple[int, str]]:
    lines: list[tuple[int, str]] = []
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.lstrip() if pending else raw
        if not pending:
            start = number
            stripped = line.lstrip()
            if not stripped or stripped[0] in "#!":
                continue
            line = stripped
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        lines.append((start, pending + line))
        pending = ""
    if pending:
        lines.append((start, pending))
    return lines


def _unescape(text: str, where: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise PropertiesError(f"{where}: malformed \\uXXXX escape {text[i : i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def parse_properties(text: str, source: str = "<properties>") -> dict[str, str]:
    """Parse the text of a properties file into an ordered dict (later keys win, as in Java)."""
    result: dict[str, str] = {}
    for number, line in _logical_lines(text):
        where = f"{source}:{number}"
        key, value = _split(line)
        result[_unescape(key, where)] = _unescape(value, where)
    return result


def load_properties(path: str | Path) -> dict[str, str]:
    """Read a properties file; a missing or unreadable file is a PropertiesError naming it."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise PropertiesError(f"cannot read {p}: {exc.strerror or exc}") from exc
    return parse_properties(text, str(p))
