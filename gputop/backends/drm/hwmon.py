"""Read a card's hwmon folder: one named file, or every ``<kind>N_input`` by its label."""

from __future__ import annotations

import os

from gputop.backends.drm.cards import Card
from gputop.backends.drm.files import Files


def path(card: Card, name: str) -> str | None:
    return os.path.join(card.hwmon, name) if card.hwmon is not None else None


def integer(files: Files, card: Card, name: str) -> int | None:
    """The integer in the card's hwmon file ``name``; None without hwmon or the file."""
    where = path(card, name)
    return files.integer(where) if where is not None else None


def labelled(files: Files, card: Card, kind: str) -> dict[str, int | None]:
    """``{label: value}`` of a hwmon folder's ``<kind>N_input`` files ("temp", "freq",
    "energy"), labels lower case, an unlabelled one keyed by its stem ("temp1")."""
    if card.hwmon is None:
        return {}
    try:
        names = os.listdir(card.hwmon)
    except OSError:
        return {}
    out: dict[str, int | None] = {}
    for name in sorted(names):
        if not (name.startswith(kind) and name.endswith("_input")):
            continue
        stem = name[: -len("_input")]
        label = files.text(os.path.join(card.hwmon, stem + "_label"))
        out[(label or stem).lower()] = files.integer(os.path.join(card.hwmon, name))
    return out


def write_integer(where: str, value: int) -> None:
    """Write ``value`` to the hwmon file at ``where`` as the kernel parses it (decimal, one
    write); raises the OSError the kernel gives (PermissionError, EROFS, EINVAL …)."""
    fd = os.open(where, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, f"{value}\n".encode("ascii"))
    finally:
        os.close(fd)
