"""The alert types every part of `gputop.alerts` and its consumers share.

A `Rule` is what a person wrote, checked; an `Alert` is one transition of one rule for one
subject (a GPU, a process, a job): it fires once and resolves once. Both are plain frozen
values, so the engine stays pure and the journal, the agent stream and the notifiers can write
them as JSON without knowing the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

Severity = Literal["info", "warning", "critical"]
SEVERITIES: tuple[Severity, ...] = ("info", "warning", "critical")

# What a rule watches:
#   threshold  a numeric `Device` field against a value (`temperature_c > 85`)
#   hint       one of `gputop.core.model.HINT_CODES` being raised for a GPU
#   health     a health event: xid, ecc-uncorrected, rows-remapped, link-degraded, gpu-lost
#   gpu        a GPU becoming free (no processes) or busy (its first process)
#   end        a process or a job leaving the GPUs
ConditionKind = Literal["threshold", "hint", "health", "gpu", "end"]
AlertState = Literal["firing", "resolved"]


@dataclass(frozen=True)
class Condition:
    """The rule's condition: ``kind`` and its ``subject`` (a field, a hint code, a health
    event, ``free``/``busy``, ``process``/``job``), with an operator and value for thresholds
    and how long it must hold before the rule fires."""

    kind: ConditionKind
    subject: str
    op: str | None = None  # thresholds: ">", ">=", "<", "<=", "==", "!="
    value: float | None = None
    for_s: float = 0.0


@dataclass(frozen=True)
class Scope:
    """Which GPUs, users and jobs a rule applies to; None: all."""

    gpus: frozenset[int] | None = None
    users: frozenset[str] | None = None
    jobs: frozenset[str] | None = None


@dataclass(frozen=True)
class Rule:
    """One alert rule, checked; ``text`` is the condition as written, for listings."""

    name: str
    condition: Condition
    text: str
    severity: Severity = "warning"
    scope: Scope = Scope()
    cooldown_s: float = 300.0
    notify: tuple[str, ...] | None = None  # channel names; None: every channel
    default: bool = False  # shipped with gputop, not from the settings file


@dataclass(frozen=True)
class Alert:
    """One transition of a rule for one subject: fired, or resolved.

    ``key`` names the subject stably across samples and restarts (``rule/node/gpu0``,
    ``rule/node/gpu0/pid1234``), so the journal can tell a re-fire from a repeat.
    ``labels`` carry what a receiver filters on: user, job, pid, xid, the value seen.
    """

    rule: str
    key: str
    state: AlertState
    severity: Severity
    at: float  # epoch seconds of the sample that made the transition
    summary: str  # one line a person reads
    node: str | None = None
    gpu: int | None = None
    since: float | None = None  # when the condition began to hold
    labels: tuple[tuple[str, str], ...] = ()

    def label(self, name: str) -> str | None:
        """Return one label's value, or None."""
        for key, value in self.labels:
            if key == name:
                return value
        return None

    def to_json(self) -> dict[str, Any]:
        """Return the alert as the JSON object the journal, the agent stream and the
        generic webhook carry."""
        return {
            "rule": self.rule, "key": self.key, "state": self.state,
            "severity": self.severity, "at": self.at, "summary": self.summary,
            "node": self.node, "gpu": self.gpu, "since": self.since,
            "labels": dict(self.labels),
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Alert:
        """Read back what `to_json` wrote (the journal, an agent's stream); raises
        ``ValueError`` naming what is wrong."""
        try:
            state = obj["state"]
            severity = obj["severity"]
            if state not in ("firing", "resolved"):
                raise ValueError(f"unknown state {state!r}")
            if severity not in SEVERITIES:
                raise ValueError(f"unknown severity {severity!r}")
            labels = obj.get("labels") or {}
            return cls(
                rule=str(obj["rule"]), key=str(obj["key"]), state=state,
                severity=severity, at=float(obj["at"]), summary=str(obj["summary"]),
                node=None if obj.get("node") is None else str(obj["node"]),
                gpu=None if obj.get("gpu") is None else int(obj["gpu"]),
                since=None if obj.get("since") is None else float(obj["since"]),
                labels=tuple((str(k), str(v)) for k, v in dict(labels).items()),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not an alert: {exc}") from None


class DeliveryError(Exception):
    """A channel could not deliver an alert; the message never holds a secret."""


class Notifier(Protocol):
    """A channel that carries alerts to people (a webhook, a command, the terminal, mail).

    ``send`` blocks until delivered or ``timeout_s`` passed and raises `DeliveryError` on
    failure; the dispatcher calls it off the sampler's and the UI's threads, with retries.
    """

    @property
    def name(self) -> str: ...

    def send(self, alert: Alert, timeout_s: float) -> None: ...
