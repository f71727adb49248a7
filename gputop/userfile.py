"""Reading a small file that a user names: settings, themes, hosts, web configs, state files,
journals, token files.

Whatever the path turns out to be, the read is bounded and its failure is one line: a FIFO or a
terminal is never waited on (opened non-blocking, then refused unless regular), ``/dev/zero`` is
never read whole (at most ``limit`` bytes), a directory is named as one, bytes that are not UTF-8
are located, and a document nested deeper than ``MAX_DEPTH`` is refused before any recursive code
(a parser, a validator) can hit Python's recursion limit on it.

Callers put the problem into their own error type, after naming the file:
``raise UsageError(f"hosts file {path}: {exc}")``. Pure apart from the one read; it imports only
the core (``untrusted`` for strict JSON).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from typing import Any

MAX_BYTES = 1 << 20  # every file of this kind is a few KiB; a link to /dev/zero is not
MAX_DEPTH = 64  # gputop's deepest document (a theme, a web config) nests 3 levels

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
          (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))


class FileProblem(ValueError):
    """What is wrong with a file, in words that follow its name (never multi-line)."""


def kind_of(mode: int) -> str:
    """Name what a non-regular file is, for 'not a regular file (a FIFO)'."""
    return next((name for test, name in _KINDS if test(mode)), "not a plain file")


def read_bytes(path: str | os.PathLike[str], limit: int = MAX_BYTES) -> bytes:
    """Return the whole of a regular file of at most ``limit`` bytes.

    Raises FileNotFoundError where nothing is at ``path`` (callers decide whether a missing file
    is an error) and FileProblem for anything else that stops the read."""
    try:
        # O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise FileProblem(f"cannot read it: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise FileProblem(f"not a regular file ({kind_of(mode)})")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise FileProblem(f"cannot read it: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise FileProblem(f"larger than {_size(limit)}: not a file of this kind")
    return b"".join(chunks)


def decode(data: bytes) -> str:
    """Return ``data`` as UTF-8 text; FileProblem names the first byte that is not."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                          f"{exc.start})") from None
    if "\x00" in text:
        raise FileProblem(f"holds a NUL byte at offset {text.index(chr(0))}: not a text file")
    return text


def read_text(path: str | os.PathLike[str], limit: int = MAX_BYTES) -> str:
    """Return a small regular file's UTF-8 text (see :func:`read_bytes` and :func:`decode`)."""
    return decode(read_bytes(path, limit))


def depth(doc: Any) -> int:
    """Return how deeply lists and dicts nest in ``doc`` (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(doc, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        level += 1
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level) for child in children)
    return deepest


def shallow(doc: Any) -> Any:
    """Return ``doc`` if it nests at most MAX_DEPTH levels; else raise FileProblem."""
    if depth(doc) > MAX_DEPTH:
        raise FileProblem(f"nested deeper than {MAX_DEPTH} levels")
    return doc


def parse(text: str, loads: Callable[[str], Any], language: str,
          errors: tuple[type[BaseException], ...]) -> Any:
    """Return ``loads(text)``, refused with one FileProblem line when it is not ``language``
    (one of ``errors``), nests too deeply, or makes the parser recurse past Python's limit."""
    try:
        return shallow(loads(text))
    except RecursionError:
        raise FileProblem(f"nested deeper than {MAX_DEPTH} levels") from None
    except errors as exc:
        raise FileProblem(f"not valid {language}: {one_line(str(exc))}") from None


def load_toml(text: str) -> dict[str, Any]:
    """Return a TOML document, or raise FileProblem."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    doc: dict[str, Any] = parse(text, tomllib.loads, "TOML", (tomllib.TOMLDecodeError,))
    return doc


def load_json(text: str) -> Any:
    """Return a JSON document (``NaN`` and ``Infinity`` refused), or raise FileProblem."""
    from gputop.untrusted import loads

    return parse(text, loads, "JSON", (ValueError,))


def one_line(text: str, limit: int = 200) -> str:
    """Return ``text`` folded to one line of at most ``limit`` characters (a parser's message
    can quote the file, newlines and escapes included)."""
    flat = " ".join(text.split())
    flat = "".join(c if c.isprintable() else "?" for c in flat)
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 and not limit % (1 << 20) else \
        f"{limit >> 10} KiB" if limit >= 1 << 10 else f"{limit} bytes"
