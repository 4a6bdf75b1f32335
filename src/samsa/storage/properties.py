"""Java ``.properties`` files: Kafka's ``server.properties``, a log dir's ``meta.properties``, topic configs.

Lines are ``key=value``, ``key: value`` or ``key value``; ``#`` and ``!`` start comments; a line ending in an odd
number of backslashes continues on the next (leading whitespace of the continuation dropped);
``\\t \\n \\r \\f \\uXXXX`` and escaped separators are unescaped. Written with ``=``, a ``#`` comment header, and
``\\ = : # !`` (and a leading or key space) escaped. The one reader and writer of the format: storage owns it (the
lowest layer reading such files) and the broker's configuration reads through it.
"""

from __future__ import annotations

import time
from pathlib import Path

from .checkpoint import write_atomically
from .errors import StorageError

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_UNESCAPES = {value: key for key, value in _ESCAPES.items()}


class PropertiesError(StorageError, ValueError):
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


def _escape(text: str, is_key: bool) -> str:
    out: list[str] = []
    for index, ch in enumerate(text):
        if ch in "\\=:#!" or (ch == " " and (is_key or index == 0)):
            out.append("\\" + ch)
        elif ch in _UNESCAPES:
            out.append("\\" + _UNESCAPES[ch])
        elif not ch.isprintable():
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else ch)
        else:
            out.append(ch)
    return "".join(out)


def format_properties(props: dict[str, str], comment: str | None = None) -> str:
    lines = ["#"]
    lines.append(
        "#" + (comment if comment is not None else time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime()))
    )
    lines.extend(f"{_escape(k, True)}={_escape(v, False)}" for k, v in props.items())
    return "\n".join(lines) + "\n"


def read_properties_file(path: Path) -> dict[str, str]:
    """The properties in ``path`` (OSError when it cannot be read, PropertiesError when malformed)."""
    return parse_properties(path.read_text("utf-8"), str(path))


def write_properties_file(path: Path, props: dict[str, str], comment: str | None = None) -> None:
    """Write ``props`` atomically (temp file, fsync, rename)."""
    write_atomically(path, format_properties(props, comment).encode("utf-8"))
