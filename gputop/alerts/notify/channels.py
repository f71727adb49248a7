"""The settings file's ``[alerts.channel.NAME]`` tables: read into frozen configs, then built
into the dispatcher's channels.

`parse` is pure: it checks every key of every table and returns one config per channel, or
raises `UsageError` with one line naming the file, the channel (``alerts.channel.NAME``), the
key and what is wrong. It never quotes a webhook's URL or a header's value: a URL is shown as
`redact.redact_url` does. `build` turns configs into `dispatch.Channel`s, and checks what only
this node can say: that ``sendmail`` exists for a mail channel, and that a command's program
does. Terminal channels need the terminal: without one (``gputop watch``) they are skipped,
and said so.

    [alerts.channel.ops]
    type = "webhook"            # webhook | command | bell | osc9 | osc777 | mail
    url = "https://hooks.slack.com/services/T000/B000/XXXX"
    format = "slack"            # generic | slack | teams | discord
    headers = { Authorization = "Bearer …" }
    timeout = 10                # seconds per attempt; retries = 3; queue = 100
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from gputop.alerts.notify import payloads
from gputop.alerts.notify.command import CommandNotifier, command_argv
from gputop.alerts.notify.dispatch import Channel, DeliveryPolicy
from gputop.alerts.notify.redact import redact_url
from gputop.alerts.notify.terminal import TERMINAL_KINDS, TerminalKind, TerminalNotifier, Writable
from gputop.config.settings import written
from gputop.core import bounds
from gputop.core.errors import UsageError

TYPES = ("webhook", "command", *TERMINAL_KINDS, "mail")
COMMON_KEYS = ("type", "timeout", "retries", "queue")
KEYS = {
    "webhook": ("url", "format", "headers"),
    "command": ("command", "shell"),
    "bell": ("tmux",), "osc9": ("tmux",), "osc777": ("tmux",),
    "mail": ("to", "from", "sendmail"),
}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_ADDRESS = re.compile(r"[^\s@<>,;\"]+@[^\s@<>,;\"]+")
Bad = Callable[..., UsageError]  # (why, key=None): the one-line error for this channel


@dataclass(frozen=True)
class WebhookConfig:
    name: str
    policy: DeliveryPolicy
    url: str = field(repr=False)
    format: str = "generic"
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def __repr__(self) -> str:
        return (f"WebhookConfig(name={self.name!r}, url={redact_url(self.url)!r}, "
                f"format={self.format!r}, headers={[k for k, _ in self.headers]!r})")

    def describe(self) -> str:
        return f"webhook {redact_url(self.url)} ({self.format})"


@dataclass(frozen=True)
class CommandConfig:
    name: str
    policy: DeliveryPolicy
    argv: tuple[str, ...]
    shell: bool = False

    def describe(self) -> str:
        return f"command {os.path.basename(self.argv[0])}"


@dataclass(frozen=True)
class TerminalConfig:
    name: str
    policy: DeliveryPolicy
    kind: TerminalKind
    tmux: bool | None = None  # None: when $TMUX says gputop runs inside tmux

    def describe(self) -> str:
        return f"terminal {self.kind}"


@dataclass(frozen=True)
class MailConfig:
    name: str
    policy: DeliveryPolicy
    to: tuple[str, ...]
    sender: str | None = None
    sendmail: str | None = None  # None: looked for on PATH, /usr/sbin, /usr/lib

    def describe(self) -> str:
        return "mail to " + ", ".join(self.to)


ChannelConfig = WebhookConfig | CommandConfig | TerminalConfig | MailConfig


def parse(table: object, where: str) -> tuple[ChannelConfig, ...]:
    """Check the ``[alerts.channel]`` table of the file ``where`` (its value as TOML read it)
    and return its channels, in the file's order."""
    if not isinstance(table, Mapping):
        raise UsageError(f"{where}: alerts.channel: must be tables, one per channel "
                         f"([alerts.channel.NAME]; got {written(table)})")
    return tuple(_channel(str(name), spec, where) for name, spec in table.items())


def _channel(name: str, spec: object, where: str) -> ChannelConfig:
    at = f"alerts.channel.{name}"

    def bad(why: str, key: str | None = None) -> UsageError:
        return UsageError(f"{where}: {at}{'.' + key if key else ''}: {why}")

    if not _NAME.fullmatch(name):
        raise UsageError(f"{where}: alerts.channel: {written(name)} is not a channel name "
                         "(letters, digits, '_', '-', '.'; at most 64)")
    if not isinstance(spec, Mapping):
        raise bad(f"must be a table (got {written(spec)})")
    kind = spec.get("type")
    if kind is None:
        raise bad(f"says no type (one of {', '.join(TYPES)})")
    if kind not in TYPES:
        raise bad(f"must be one of {', '.join(TYPES)} (got {written(kind)})", "type")
    known = COMMON_KEYS + KEYS[kind]
    for key in spec:
        if key not in known:
            raise bad(f"unknown key {str(key)!r} for a {kind} channel (known: {', '.join(known)})")
    policy = DeliveryPolicy(
        timeout_s=float(_number(spec, "timeout", bounds.ALERT_TIMEOUT,
                                DeliveryPolicy.timeout_s, bad)),
        retries=int(_number(spec, "retries", bounds.ALERT_RETRIES, DeliveryPolicy.retries, bad)),
        queue=int(_number(spec, "queue", bounds.ALERT_QUEUE, DeliveryPolicy.queue, bad)))
    if kind == "webhook":
        return _webhook(name, policy, spec, bad)
    if kind == "command":
        return _command(name, policy, spec, bad)
    if kind == "mail":
        return _mail(name, policy, spec, bad)
    tmux = spec.get("tmux")
    if tmux is not None and not isinstance(tmux, bool):
        raise bad(f"must be true or false (got {written(tmux)})", "tmux")
    return TerminalConfig(name, policy, kind, tmux)


def _number(spec: Mapping[str, object], key: str, bound: bounds.Bound, default: float,
            bad: Bad) -> float | int:
    if key not in spec:
        return default
    value = spec[key]
    wanted = f"must be {bound.kind()} from {bound.describe()} (got {written(value)})"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad(wanted, key)
    if bound.problem(repr(value)) is not None:
        raise bad(wanted, key)
    return value


def _webhook(name: str, policy: DeliveryPolicy, spec: Mapping[str, object],
             bad: Bad) -> WebhookConfig:
    url = spec.get("url")
    if url is None:
        raise bad("a webhook needs a url")
    if not isinstance(url, str):
        raise bad(f"must be a URL in quotes (got {type(url).__name__})", "url")
    problem = url_problem(url)
    if problem:
        raise bad(problem, "url")
    fmt = spec.get("format", "generic")
    if fmt not in payloads.FORMATS:
        raise bad(f"must be one of {', '.join(payloads.FORMATS)} (got {written(fmt)})", "format")
    headers = spec.get("headers", {})
    if not isinstance(headers, Mapping):
        raise bad(f"must be a table of names and values (got {written(headers)})", "headers")
    pairs = []
    for hname, value in headers.items():
        if not isinstance(value, str):
            raise bad(f"{hname}'s value must be in quotes (got {type(value).__name__})",
                      "headers")
        why = _header_problem(str(hname), value)
        if why:
            raise bad(why, "headers")
        pairs.append((str(hname), value))
    return WebhookConfig(name, policy, url, str(fmt), tuple(pairs))


def url_problem(url: str) -> str | None:
    """Return why ``url`` cannot be a webhook's URL, without quoting its secret parts; or None."""
    from urllib.parse import urlsplit

    shown = redact_url(url)
    if any(not c.isprintable() or c.isspace() for c in url):
        return f"holds a space or a control character ({shown})"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - reading it checks it
    except ValueError:
        return f"is not a URL ({shown})"
    if parts.scheme not in ("http", "https"):
        return f"must begin with http:// or https:// ({shown})"
    if not parts.hostname:
        return f"names no host ({shown})"
    return None


def _command(name: str, policy: DeliveryPolicy, spec: Mapping[str, object],
             bad: Bad) -> CommandConfig:
    command = spec.get("command")
    shell = spec.get("shell", False)
    if not isinstance(shell, bool):
        raise bad(f"must be true or false (got {written(shell)})", "shell")
    if command is None:
        raise bad("a command channel needs a command")
    if isinstance(command, list):
        if not all(isinstance(a, str) for a in command):
            raise bad(f"must be a string or a list of strings (got {written(command)})",
                      "command")
        if shell:
            raise bad("shell = true takes the command as one string", "command")
    elif not isinstance(command, str):
        raise bad(f"must be a string or a list of strings (got {written(command)})", "command")
    try:
        argv = command_argv(command, shell)
    except ValueError as exc:
        raise bad(str(exc), "command") from None
    return CommandConfig(name, policy, tuple(argv), shell)


def _mail(name: str, policy: DeliveryPolicy, spec: Mapping[str, object],
          bad: Bad) -> MailConfig:
    to = spec.get("to")
    if to is None:
        raise bad("a mail channel needs to = an address, or a list of them")
    addresses = [to] if isinstance(to, str) else to
    if not isinstance(addresses, list) or not addresses:
        raise bad(f"must be an address or a list of them (got {written(to)})", "to")
    for address in addresses:
        if not isinstance(address, str) or not _ADDRESS.fullmatch(address):
            raise bad(f"{written(address)} is not an e-mail address", "to")
    sender = spec.get("from")
    if sender is not None and (not isinstance(sender, str) or not _ADDRESS.fullmatch(sender)):
        raise bad(f"{written(sender)} is not an e-mail address", "from")
    sendmail = spec.get("sendmail")
    if sendmail is not None and (not isinstance(sendmail, str) or not sendmail.startswith("/")):
        raise bad(f"must be the absolute path of sendmail (got {written(sendmail)})",
                  "sendmail")
    return MailConfig(name, policy, tuple(addresses), sender, sendmail)


# ------------------------------------------------------------------ building the channels


@dataclass(frozen=True)
class Built:
    """The channels to dispatch to, and one line per channel left out (a terminal channel
    with no terminal to write to)."""

    channels: tuple[Channel, ...]
    skipped: tuple[str, ...] = ()


def build(configs: tuple[ChannelConfig, ...], where: str, terminal: Writable | None = None,
          environ: Mapping[str, str] | None = None) -> Built:
    """Return the channels for ``configs``; raise UsageError (one line naming the file and the
    channel) for a mail channel with no sendmail, or a command whose program is not there.
    ``terminal`` is where the bell and OSC channels write; None skips them."""
    env = os.environ if environ is None else environ
    channels: list[Channel] = []
    skipped: list[str] = []
    for config in configs:
        at = f"{where}: alerts.channel.{config.name}"
        if isinstance(config, WebhookConfig):
            # http, ssl and email load only where a channel needs them: a dashboard with a
            # command or terminal channel starts without them (issue #26's start-up memory).
            from gputop.alerts.notify.webhook import WebhookNotifier

            hook = WebhookNotifier(config.name, config.url, config.format, dict(config.headers))
            channels.append(Channel(hook, config.policy, hook.describe()))
        elif isinstance(config, CommandConfig):
            _check_program(config, at, env)
            runner = CommandNotifier(config.name, config.argv, env)
            channels.append(Channel(runner, config.policy, runner.describe(), runner.close))
        elif isinstance(config, MailConfig):
            from gputop.alerts.notify import mail

            sendmail = _sendmail(config, at, env)
            sender = mail.MailNotifier(config.name, sendmail, config.to, config.sender)
            channels.append(Channel(sender, config.policy, sender.describe(), sender.close))
        elif terminal is None:
            skipped.append(f"{at}: {config.kind} needs a terminal: skipped here")
        else:
            tmux = bool(env.get("TMUX")) if config.tmux is None else config.tmux
            notifier = TerminalNotifier(config.name, config.kind, terminal, tmux)
            channels.append(Channel(notifier, config.policy, notifier.describe()))
    return Built(tuple(channels), tuple(skipped))


def check(configs: tuple[ChannelConfig, ...], where: str,
          environ: Mapping[str, str] | None = None) -> None:
    """Raise UsageError (one line naming the file and the channel) for what only this node can
    say of ``configs``: a mail channel with no sendmail, a command whose program is not there.
    Builds nothing, so a start-up check loads no network or mail code."""
    env = os.environ if environ is None else environ
    for config in configs:
        at = f"{where}: alerts.channel.{config.name}"
        if isinstance(config, CommandConfig):
            _check_program(config, at, env)
        elif isinstance(config, MailConfig):
            _sendmail(config, at, env)


def _sendmail(config: MailConfig, at: str, env: Mapping[str, str]) -> str:
    from gputop.alerts.notify import mail

    sendmail = config.sendmail or mail.find_sendmail(env)
    if sendmail is None or not os.access(sendmail, os.X_OK):
        looked = (config.sendmail if config.sendmail else
                  "on PATH, in " + " or ".join(mail.SENDMAIL_DIRS))
        raise UsageError(f"{at}: no sendmail {looked}: install a mail transfer agent "
                         "(postfix, exim, msmtp-mta, nullmailer) or remove the channel")
    return sendmail


def _check_program(config: CommandConfig, at: str, env: Mapping[str, str]) -> None:
    program = config.argv[0]
    if config.shell:
        return  # /bin/sh runs it; what it names is the shell's to find
    if "/" in program:
        if not os.access(program, os.X_OK) or os.path.isdir(program):
            raise UsageError(f"{at}: command: {program} is not an executable file")
    elif shutil.which(program, path=env.get("PATH", os.defpath)) is None:
        raise UsageError(f"{at}: command: no program {program!r} on PATH")


def _header_problem(name: str, value: str) -> str | None:
    from gputop.alerts.notify.webhook import header_problem

    return header_problem(name, value)
