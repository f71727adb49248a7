"""Reading a small file that a user names: settings, themes, hosts, web configs, state files,
journals, token files.

Whatever the path turns out to be, the read is bounded and its failure is one line: a FIFO or a
terminal is never waited on (opened non-blocking, then refused unless regular), ``/dev/zero`` is
never read whole (at most ``limit`` bytes), a directory is named as one, bytes that are not UTF-8
are located, and a document nested deeper than ``MAX_DEPTH`` is refused before any recursive code
(a parser, a validator) can hit Python's recursion limit on it.

A reader that streams a file too large to take whole (a replay log) shares the same refusals
through :func:`open_regular`; a state file or journal that gputop writes back is replaced whole by
:func:`write_atomic`, whose failure (a read-only folder) is one line too.

Callers put the problem into their own error type, after naming the file:
``raise UsageError(f"hosts file {path}: {exc}")``. Pure apart from the one read or write; it
imports only the core (``untrusted`` for strict JSON, ``visible`` for messages).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterable
from typing import Any, BinaryIO

from gputop.core.visible import visible

MAX_BYTES = 1 << 20  # every file of this kind is a few KiB; a link to /dev/zero is not
MAX_DEPTH = 64  # gputop's deepest document (a theme, a web config) nests 3 levels

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
          (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))


class FileProblem(ValueError):
    """What is wrong with a file, in words that follow its name (never multi-line)."""


class Unreadable(FileProblem):
    """The system refused the read (permissions, I/O): the file may well be right."""

    def __init__(self, exc: OSError) -> None:
        super().__init__(f"cannot read it: {exc.strerror or exc}")
        self.reason = exc.strerror or str(exc)


def kind_of(mode: int) -> str:
    """Name what a non-regular file is, for 'not a regular file (a FIFO)'."""
    return next((name for test, name in _KINDS if test(mode)), "not a plain file")


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """Open ``path`` for reading in binary, refusing at once anything but a regular file.

    For a reader that streams a file too large to take whole (a replay log): the same refusals as
    :func:`read_bytes`, without its limit. Raises FileNotFoundError where nothing is at ``path``
    and FileProblem for anything else."""
    try:
        # O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise Unreadable(exc) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise FileProblem(f"not a regular file ({kind_of(mode)})")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike[str], limit: int = MAX_BYTES) -> bytes:
    """Return the whole of a regular file of at most ``limit`` bytes.

    Raises FileNotFoundError where nothing is at ``path`` (callers decide whether a missing file
    is an error) and FileProblem for anything else that stops the read."""
    with open_regular(path) as fh:
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise Unreadable(exc) from None
    if len(data) > limit:
        raise FileProblem(f"larger than {_size(limit)}: not a file of this kind")
    return data


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
    """Return how deeply lists and dicts nest in ``doc`` (a scalar is 0), without recursion.

    A container met again no deeper than before is not walked again: YAML aliases share one
    container many times over (a "billion laughs" document would otherwise take forever), and
    may even hold themselves (the walk stops past MAX_DEPTH)."""
    deepest = 0
    walked: dict[int, int] = {}  # id of a container -> the deepest level it was walked at
    stack: list[tuple[Any, int]] = [(doc, 0)]
    while stack:
        node, level = stack.pop()
        children: Iterable[Any]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        if walked.get(id(node), -1) >= level:
            continue
        walked[id(node)] = level
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
    """Return a JSON document (``NaN`` and ``Infinity`` refused, and a key given twice in one
    object, which JSON parsers resolve differently), or raise FileProblem."""
    from gputop.core.untrusted import loads

    return parse(text, lambda t: loads(t, object_pairs_hook=_unique_keys), "JSON", (ValueError,))


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc:
            raise ValueError(f"the key {one_line(repr(key), 60)} appears twice in one object")
        doc[key] = value
    return doc


def one_line(text: str, limit: int = 200) -> str:
    """Return ``text`` folded to one line of at most ``limit`` characters, its controls made
    visible (a parser's message, a server's error text can quote anything)."""
    flat = visible(" ".join(text.split()))
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Replace the file at ``path`` with ``text`` whole, or raise FileProblem saying why not.

    The text goes to a new file beside it, is fsync'd and renamed over ``path``, and the folder
    is fsync'd: a reader never sees half a file, and a crash leaves the old file or the new one.
    A folder that cannot be written (read-only, not a folder) is refused before anything of
    ``path`` changes, and no temporary file is left behind."""
    import tempfile

    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".gputop-")
    except OSError as exc:
        raise FileProblem(f"cannot write in its folder: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise FileProblem(f"cannot write it: {exc.strerror or exc}") from None
        raise
    fsync_folder(folder)


def fsync_folder(folder: str | os.PathLike[str]) -> None:
    """Flush a folder's entries to disk (a rename or an unlink in it), where the system can."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 and not limit % (1 << 20) else \
        f"{limit >> 10} KiB" if limit >= 1 << 10 else f"{limit} bytes"
