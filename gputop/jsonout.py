"""JSON as gputop writes it: every document, from every command, refuses non-finite numbers.

``NaN`` and ``Infinity`` are not JSON; Python's ``json`` writes them by default. Every place
that writes JSON goes through here (a test holds that), so ``allow_nan=False`` holds by
construction: a non-finite value raises ValueError at the source instead of reaching a script.
"""

from __future__ import annotations

import json
from typing import IO, Any


def dumps(obj: Any, **kwargs: Any) -> str:
    return json.dumps(obj, allow_nan=False, **kwargs)


def dump(obj: Any, fh: IO[str], **kwargs: Any) -> None:
    # Encoded whole first, so a refused value leaves nothing half-written in ``fh``.
    fh.write(dumps(obj, **kwargs))
