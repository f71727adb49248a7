"""A process's command as the process table shows it: the program first.

A training job's command line starts with its interpreter's full path
(`/home/u/.pyenv/versions/3.11.7/bin/python3 train.py --rank 0`), which fills a narrow column
before the script shows. The table shows the interpreter's name and everything after it
(`python3 train.py --rank 0`); the process view keeps the whole line. Pure, no Textual.
"""

from __future__ import annotations

import re

ELLIPSIS = "…"
# A first word that is a plain path: only then is it cut to its last part. A name with other
# characters (a hostile argv[0] with escapes, a newline or markup holding "/") stays whole,
# so that no part of it can pass for a program's name.
_PATH = re.compile(r"[\w.+@~-]*(/[\w.+@~-]*)+")


def program_first(command: str) -> str:
    """``command`` with its first word, when a plain path, cut to the program's name."""
    head, sep, rest = command.partition(" ")
    if not _PATH.fullmatch(head):
        return command
    name = head.rstrip("/").rsplit("/", 1)[-1] or head
    return name + sep + rest


def elide_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters: its start and end kept, the middle elided (the
    program and script at the start, the last arguments at the end: both say which run it is)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    head = (width - 1) * 2 // 3
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


__all__ = ["elide_middle", "program_first"]
