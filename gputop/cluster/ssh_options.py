"""The ssh options a hosts file may carry: an allow-list, every value checked.

A hosts file is data, not a script. An ssh option can run a local command (ProxyCommand,
LocalCommand, KnownHostsCommand, Match exec, a PKCS#11 or security-key library), load a config that
can (-F, Include), write a local file (-E, control sockets, known_hosts updates), open a local
listener (-L, -R, -D, -w) or weaken host-key checking; a deny-list of those always misses one. So
only the options below pass, each with a value of a strict shape (no spaces, quotes, shell syntax,
or a leading '-'); anything else belongs in the user's own ssh config.

Spellings follow ssh's: ``-p 22`` or ``-p22``; ``-o Key=Value``, ``-oKey=Value``, ``-o "Key Value"``;
keys case-insensitively.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gputop.core.errors import UsageError

MAX_ARG_LEN = 1024

_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}"  # a DNS name, an ssh config alias or an IPv4 address
_IPV6 = r"\[[0-9A-Fa-f:.]{2,45}(?:%[A-Za-z0-9_.-]{1,32})?\]"
_HOST = rf"(?:{_NAME}|{_IPV6})"
_USER = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}"
_JUMP_RE = re.compile(rf"(?:ssh://)?(?:{_USER}@)?{_HOST}(?::([0-9]{{1,5}}))?")
# A key file path; ssh expands '~' and %-tokens (%d: home) in it, and only reads it.
_PATH = r"[A-Za-z0-9_.~/%+][A-Za-z0-9_.~/%+,:@-]{0,1023}"


def _match(pattern: str) -> Callable[[str], bool]:
    compiled = re.compile(pattern)
    return lambda value: compiled.fullmatch(value) is not None


def _port(value: str) -> bool:
    return value.isascii() and value.isdigit() and 1 <= int(value) <= 65535


def _jumps(value: str) -> bool:
    hops = value.split(",")
    return len(hops) <= 16 and all(_hop(hop) for hop in hops)


def _hop(hop: str) -> bool:
    match = _JUMP_RE.fullmatch(hop)
    return match is not None and (match.group(1) is None or _port(match.group(1)))


def _count(value: str) -> bool:
    return value.isascii() and value.isdigit() and len(value) <= 9


def _one_of(*allowed: str) -> Callable[[str], bool]:
    return lambda value: value.lower() in allowed


_YES_NO = ("yes", "no", "true", "false")

# (what the value must be, its check)
_Value = tuple[str, Callable[[str], bool]]
PORT: _Value = ("a port number 1-65535", _port)
PATH: _Value = ("a file path (no spaces, not starting with '-')", _match(_PATH))
USER: _Value = ("a user name (letters, digits, '_', '.', '-')", _match(_USER))
JUMPS: _Value = ("[user@]host[:port], comma-separated (IPv6 in brackets)", _jumps)
HOST: _Value = ("a host name or address", _match(_HOST))
COUNT: _Value = ("a whole number", _count)
YES_NO: _Value = ("yes or no", _one_of(*_YES_NO))

# Flags that take a value, and those that take none.
VALUE_FLAGS: dict[str, _Value] = {"p": PORT, "i": PATH, "l": USER, "J": JUMPS}
PLAIN_FLAGS = frozenset("46C")
# -o keys, as ssh_config(5) spells them.
OPTION_KEYS: dict[str, _Value] = {
    "Port": PORT,
    "User": USER,
    "HostName": HOST,
    "IdentityFile": PATH,
    "IdentitiesOnly": YES_NO,
    "ProxyJump": JUMPS,
    "ConnectTimeout": COUNT,
    "ConnectionAttempts": COUNT,
    "ServerAliveInterval": COUNT,
    "ServerAliveCountMax": COUNT,
    "TCPKeepAlive": YES_NO,
    "Compression": YES_NO,
    "AddressFamily": ("any, inet or inet6", _one_of("any", "inet", "inet6")),
    "HostKeyAlias": HOST,
    # accept-new writes known_hosts; no and off stop checking host keys.
    "StrictHostKeyChecking": ("yes (anything else writes known_hosts or stops checking host keys)",
                              _one_of("yes", "true")),
}
_KEYS_LOWER = {k.lower(): k for k in OPTION_KEYS}

# Why some well-known options are refused (others get the general line).
_RUNS = "it runs a local command"
_FLAG_WHY = {
    "F": "it loads another ssh config, whose ProxyCommand or Match exec runs local commands",
    "E": "it writes a local log file",
    "S": "it makes a control socket, a local file",
    "M": "it makes a control socket, a local file",
    "I": "it loads a local PKCS#11 library",
    "L": "it opens a local listener",
    "R": "it forwards connections to this machine",
    "D": "it opens a local listener",
    "w": "it opens a local tunnel device",
    "W": "it replaces the session with a forwarded connection",
    "f": "it puts ssh in the background",
    "N": "it runs no remote command",
}
_KEY_WHY = {
    "proxycommand": _RUNS, "localcommand": _RUNS, "permitlocalcommand": _RUNS,
    "knownhostscommand": _RUNS, "match": _RUNS, "remotecommand": "the remote command is gputop's",
    "include": "it loads another ssh config",
    "pkcs11provider": "it loads a local library", "securitykeyprovider": "it loads a local library",
    "controlpath": "it makes a control socket, a local file",
    "controlmaster": "it makes a control socket, a local file",
    "controlpersist": "it makes a control socket, a local file",
    "userknownhostsfile": "it chooses which known_hosts file ssh trusts and writes",
    "globalknownhostsfile": "it chooses which known_hosts file ssh trusts",
    "updatehostkeys": "it writes known_hosts", "checkhostip": "it writes known_hosts",
    "localforward": "it opens a local listener", "dynamicforward": "it opens a local listener",
    "remoteforward": "it forwards connections to this machine",
    "tunnel": "it opens a local tunnel device",
}

_OPTION_RE = re.compile(r"\s*([A-Za-z0-9]+)(?:\s*=\s*|\s+)(.*?)\s*", re.DOTALL)
ALLOWED_TEXT = ("-p PORT, -i FILE, -l USER, -J [USER@]HOST[:PORT], -4, -6, -C, and -o with "
                + ", ".join(OPTION_KEYS))


def shown(text: str, limit: int = 80) -> str:
    """``text`` quoted for a one-line message: printable, cut to ``limit``."""
    return repr(text) if text.isprintable() and len(text) <= limit else repr(text[:limit])


def validate_ssh_args(args: object, where: str = "ssh_args") -> tuple[str, ...]:
    """Return ``args`` if every item is an allowed ssh option (and its value); raise UsageError
    naming the first one that is not."""
    if not isinstance(args, (list, tuple)) or not all(isinstance(a, str) for a in args):
        raise UsageError(f"{where}: must be a list of strings")
    i = 0
    while i < len(args):
        arg = args[i]
        if len(arg) < 2 or not arg.startswith("-") or arg.startswith("--"):
            raise UsageError(f"{where}: refusing {shown(arg)}: only ssh options belong here "
                             "(the destination is the host's name)")
        flag, value = arg[1], arg[2:]
        if flag in PLAIN_FLAGS:
            if value:
                raise UsageError(f"{where}: refusing {shown(arg)}: give each flag on its own "
                                 f"(allowed: {ALLOWED_TEXT})")
        elif flag in VALUE_FLAGS or flag == "o":
            if not value:
                i += 1
                if i == len(args):
                    raise UsageError(f"{where}: {shown(arg)} needs a value")
                value = args[i]
                arg = f"{arg} {value}"
            if flag == "o":
                _check_option(value, arg, where)
            else:
                _check_value(VALUE_FLAGS[flag], value, f"-{flag}", arg, where)
        else:
            why = _FLAG_WHY.get(flag, "it is not on gputop's list")
            raise UsageError(f"{where}: refusing {shown(arg)}: {why}; a hosts file may carry "
                             f"only {ALLOWED_TEXT} (put other options in your ssh config)")
        i += 1
    return tuple(args)


def _check_option(text: str, arg: str, where: str) -> None:
    match = _OPTION_RE.fullmatch(text)
    key = match.group(1).lower() if match else ""
    if key not in _KEYS_LOWER:
        why = _KEY_WHY.get(key, "it is not on gputop's list")
        raise UsageError(f"{where}: refusing {shown(arg)}: {why}; -o takes only "
                         f"{', '.join(OPTION_KEYS)} here (put other options in your ssh config)")
    name = _KEYS_LOWER[key]
    _check_value(OPTION_KEYS[name], match.group(2), name, arg, where)  # type: ignore[union-attr]


def _check_value(rule: _Value, value: str, name: str, arg: str, where: str) -> None:
    description, ok = rule
    if len(value) > MAX_ARG_LEN or not ok(value):
        raise UsageError(f"{where}: refusing {shown(arg)}: {name} takes {description}")
