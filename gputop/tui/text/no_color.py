"""Whether the user refused colour: the one reading of ``NO_COLOR`` in gputop."""

from __future__ import annotations

import os
from collections.abc import Mapping


def no_color(environ: Mapping[str, str] | None = None) -> bool:
    """Return whether ``NO_COLOR`` asks for no colour: set, and not to the empty string, as
    no-color.org says. ``environ``: the environment to read (default: the process's)."""
    return bool((os.environ if environ is None else environ).get("NO_COLOR"))
