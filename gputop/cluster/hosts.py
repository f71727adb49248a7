"""Which nodes to watch: host names from the command line or a TOML hosts file, validated.

A host name reaches ssh as its destination argument, so anything that ssh (or a shell, if one were
ever involved) could read as an option or as syntax is refused here, before ssh runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gputop.cluster.ssh_options import shown, validate_ssh_args
from gputop.core.errors import UsageError

MAX_HOST_LEN = 255
MAX_HOSTS = 4096
MAX_COMMAND_LEN = 8192

# An ssh destination: [user@]host, an alias, an IPv4/IPv6 address ([::1] or fe80::1%eth0), or an
# ssh:// URI. No whitespace, quotes, shell syntax or control characters: no host name has them.
_HOST_RE = re.compile(r"^(ssh://)?[A-Za-z0-9_\[][A-Za-z0-9_.@:%\[\]+-]*$")
@dataclass(frozen=True)
class HostSpec:
    """One node: the ssh destination (or alias) and what to run there."""

    name: str
    remote_command: str | None = None  # None: the default agent command
    ssh_args: tuple[str, ...] = ()


def validate_host(name: object, where: str = "host") -> str:
    """Return ``name`` if it is a plausible ssh destination; raise UsageError otherwise."""
    if not isinstance(name, str) or not name:
        raise UsageError(f"{where}: empty or non-text host name")
    if name.startswith("-"):
        raise UsageError(f"{where}: refusing host name {shown(name)}: it starts with '-' "
                         "(ssh would read it as an option)")
    if len(name) > MAX_HOST_LEN or not _HOST_RE.fullmatch(name):
        raise UsageError(f"{where}: refusing host name {shown(name)}: it holds characters no "
                         "host name has")
    return name


def hosts_from_names(names: Iterable[str]) -> list[HostSpec]:
    return [HostSpec(validate_host(n, "host")) for n in names]


def load_hosts_file(path: str | Path) -> list[HostSpec]:
    """Read ``[[host]]`` tables (``name``, optional ``remote_command`` and ``ssh_args``)."""
    from gputop.core import userfile

    p = Path(path)
    try:
        data = userfile.load_toml(userfile.read_text(p))
    except FileNotFoundError:
        raise UsageError(f"hosts file not found: {p}") from None
    except userfile.FileProblem as exc:
        raise UsageError(f"hosts file {p}: {exc}") from None
    tables = data.get("host")
    if not isinstance(tables, list) or not tables:
        raise UsageError(f"hosts file {p}: expected one or more [[host]] tables")
    unknown = sorted(set(data) - {"host"})
    if unknown:
        raise UsageError(f"hosts file {p}: unknown key {shown(unknown[0])} (only [[host]] "
                         "tables)")
    if len(tables) > MAX_HOSTS:
        raise UsageError(f"hosts file {p}: {len(tables)} hosts; at most {MAX_HOSTS}")
    specs = []
    for i, table in enumerate(tables, 1):
        where = f"{p}: host #{i}"
        if not isinstance(table, dict):
            raise UsageError(f"{where}: not a table")
        extra = set(table) - {"name", "remote_command", "ssh_args"}
        if extra:
            raise UsageError(f"{where}: unknown key(s) {', '.join(shown(k) for k in sorted(extra))}")
        name = validate_host(table.get("name"), where)
        command = table.get("remote_command")
        if command is not None:
            command = validate_remote_command(command, f"{where} ({name}) remote_command")
        ssh_args = validate_ssh_args(table.get("ssh_args", []), f"{where} ({name}) ssh_args")
        specs.append(HostSpec(name, command, ssh_args))
    return specs


def validate_remote_command(command: object, where: str = "remote command") -> str:
    """A user-written remote command runs in the remote shell, as with `ssh HOST CMD`; it must be
    a non-empty single line of printable text (a newline would end the command early on some
    shells; a NUL cannot be passed to ssh at all; other control characters hide what runs)."""
    if not isinstance(command, str) or not command.strip():
        raise UsageError(f"{where}: must be a non-empty string")
    if any(c in command for c in "\n\r\0"):
        raise UsageError(f"{where}: must be a single line")
    if len(command) > MAX_COMMAND_LEN:
        raise UsageError(f"{where}: {len(command)} characters; at most {MAX_COMMAND_LEN}")
    if not command.replace("\t", " ").isprintable():
        raise UsageError(f"{where}: refusing {shown(command)}: it holds control characters")
    return command


def dedupe(specs: Sequence[HostSpec]) -> list[HostSpec]:
    seen: set[str] = set()
    out = []
    for spec in specs:
        if spec.name in seen:
            raise UsageError(f"host {spec.name!r} is listed twice")
        seen.add(spec.name)
        out.append(spec)
    return out
