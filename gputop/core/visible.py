"""Text that others chose, made safe to show: the one place that says how.

Process names (``argv[0]``, ``prctl``'s comm), command lines, user names, container, pod and job
names, cluster node names and Prometheus labels are chosen by whoever runs a process or a
server. A terminal obeys what they hold: ``ESC ]0;`` retitles the window, ``ESC ]52;`` writes
the clipboard, ``ESC [6n`` makes the terminal type a reply, ``ESC ]8;;URL`` hides a link, a C1
byte (U+009B) is a CSI on its own, a right-to-left override (U+202E) reverses what follows, a
newline starts a row a script will read. Every such text passes :func:`visible` before it
reaches a terminal, the dashboard, a CSV cell or a Prometheus label; JSON keeps the text as it
is (JSON escapes controls itself) but never an undecodable byte (:func:`valid_unicode`).

What is shown (``str.isprintable`` draws the line, so one C-speed call passes ordinary text):

- C0 controls and DEL in caret notation, as ``cat -v`` and ``less`` show them: ESC is ``^[``,
  BEL ``^G``, a newline ``^J``, DEL ``^?``;
- a byte that was not UTF-8 (which Python keeps as a lone surrogate, U+DC80 to U+DCFF, under
  ``surrogateescape``) as that byte, ``\\xff``;
- every other character that is not printable - C1 controls (U+0080 to U+009F),
  bidirectional marks, embeddings, overrides and isolates (U+200E/F, U+202A to U+202E, U+2066 to
  U+2069, U+061C), other invisible format characters (zero-width space and joiners, U+FEFF),
  separators other than the ASCII space (U+2028, U+00A0), private-use and unassigned code
  points, other lone surrogates - as a Python escape: ``\\x9b``, ``\\u202e``, ``\\U000e0001``.

The result is printable (combining marks and wide characters pass: they draw, they do not act)
and ``visible`` of it is itself (``^`` and ``\\`` are left as they are): applying it twice, at
two layers, changes nothing. It is for showing, not for reading back.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x20 or code == 0x7F:
        return "^" + chr(code ^ 0x40)  # ESC (0x1b) -> ^[ , DEL (0x7f) -> ^?
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"  # the byte surrogateescape kept
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` with every character a terminal would act on, hide or reorder written out as
    visible characters (caret notation for C0 and DEL, escapes for the rest); printable text is
    returned as it is."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def valid_unicode(text: str) -> str:
    """``text`` with every lone surrogate (an undecodable byte that ``surrogateescape`` kept)
    replaced by U+FFFD, so that it can be encoded as UTF-8 and written into JSON that strict
    parsers accept."""
    if text.isascii():
        return text
    return _SURROGATE.sub(REPLACEMENT, text)
