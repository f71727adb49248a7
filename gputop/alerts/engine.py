"""Evaluate alert rules on the sampler's snapshots: one pure engine for every consumer.

`AlertEngine.observe` takes each snapshot in turn (with its hints, as the sampler hands it over)
and returns the transitions it makes: an alert fires once when its condition has held for the
rule's duration, and resolves once when the condition stops holding. The clock is the
snapshot's own ``time``, so a test drives the engine with snapshots built at any times and a
replay runs it at its own pace.

Each rule watches subjects, each named by a stable key (`Alert.key`): a GPU (``rule/node/gpu3``),
a GPU's Xid (``…/gpu3/xid79``), a process on a GPU (``…/gpu3/pid1234``), a job (``…/job77``).
One subject fires at most once per cooldown: a condition that flaps within it fires once, and a
condition that still holds when the cooldown has passed fires again. Events (an Xid, a process or
a job ending) fire and have nothing to resolve.

What a value the device does not report means: nothing. An unknown reading (None) neither fires
nor resolves an alert; a lost GPU's temperature is not "back under 85".

Exit status: a process gputop did not start is not its child, so its exit status is nowhere to
be read (``/proc`` forgets it with the process). The model says only that a process the driver
still listed had gone from the host (`Process.gone`); an ending says "exit not seen".
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from gputop.alerts.journal import JournalState
from gputop.alerts.model import Alert, Rule, Scope
from gputop.alerts.rules import EVENT_HEALTH, STATE_HEALTH, format_duration
from gputop.analysis.hints import device_health
from gputop.analysis.xid import explain
from gputop.core.formatting import duration
from gputop.core.model import Device, Process, Snapshot

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
    "==": operator.eq, "!=": operator.ne,
}
# The model names a number's unit by its field's last word (gputop/core/model.py).
_UNITS = (("_mibps", " MiB/s"), ("_pct", "%"), ("_mib", " MiB"), ("_mhz", " MHz"),
          ("_c", " °C"), ("_w", " W"), ("_j", " J"), ("_s", " s"))
_NAMES_SHOWN = 2  # users or jobs named in a summary before "+N"
# Samples come on a schedule, each some milliseconds off it (the first one later, while the
# backend learns its devices): a condition that held from one sample to the one two seconds
# later has held "for 2s" even if the clocks say 1.9 s. So a duration counts as held at the
# sample nearest its end: within half the gap since the node's previous sample (seen on a real
# H200 and a real H100: without it "for 2s" fired a whole sample late, at 3 s).
_NEAREST = 0.5


@dataclass(frozen=True)
class _Seen:
    """One subject of a state rule at one sample: whether the condition holds (None: not
    known), and the words and labels an alert about it carries."""

    key: str
    holds: bool | None
    gpu: int | None
    what: str  # "GPU 3 temperature 91 °C > 85"
    back: str  # how it reads once resolved: "GPU 3 temperature 80 °C"
    who: str  # " (job 1234, alice)" or ""
    labels: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class _Event:
    """One occurrence an event rule fires on."""

    key: str
    gpu: int | None
    summary: str
    labels: tuple[tuple[str, str], ...]


@dataclass
class _Track:
    """What the engine remembers of one subject between samples."""

    node: str | None
    since: float | None = None  # when the condition began to hold; None: it does not
    firing: Alert | None = None  # fired and not yet resolved
    fired_at: float | None = None  # the last fire, for the cooldown


@dataclass
class _NodeMemory:
    """The last sample's processes and Xids of one node, for the events between samples."""

    seen: bool = False  # a sample of the node came before: its processes can end
    procs: dict[tuple[int, int], tuple[Process, float]] = field(default_factory=dict)
    before: Snapshot | None = None  # the last sample: whom an Xid hit as it ended them


class AlertEngine:
    """Fire and resolve ``rules`` on successive snapshots of one node (``node``, default the
    snapshot's host). ``journal_state``: what a previous run's journal holds, so that a restart
    neither re-fires what fired nor forgets what must resolve."""

    def __init__(self, rules: Sequence[Rule], node: str | None = None,
                 journal_state: JournalState | None = None) -> None:
        self.rules = tuple(rules)
        self.node = node
        self._tracks: dict[str, _Track] = {}
        self._memory: dict[str, _NodeMemory] = {}
        by_name = {r.name: r for r in self.rules}
        if journal_state is not None:
            for key, at in journal_state.fired_at.items():
                self._tracks[key] = _Track(node=None, fired_at=at)
            for key, alert in journal_state.last.items():
                rule = by_name.get(alert.rule)
                track = self._tracks.setdefault(key, _Track(node=alert.node))
                track.node = alert.node
                if alert.state == "firing" and rule is not None and _is_state(rule):
                    track.firing = alert
                    track.since = alert.since if alert.since is not None else alert.at

    @property
    def firing(self) -> tuple[Alert, ...]:
        """Return the alerts firing now, oldest first."""
        return tuple(sorted((t.firing for t in self._tracks.values() if t.firing is not None),
                            key=lambda a: (a.at, a.key)))

    def observe(self, snap: Snapshot) -> tuple[Alert, ...]:
        """Return the alerts ``snap`` fires and resolves, at ``snap.time``."""
        node = self.node or snap.host
        memory = self._memory.setdefault(node, _NodeMemory())
        out: list[Alert] = []
        slack = 0.0 if memory.before is None else _NEAREST * max(0.0, snap.time - memory.before.time)
        owners = _Owners()
        for rule in self.rules:
            if _is_state(rule):
                out.extend(self._step_state(rule, node, snap, slack, owners))
            else:
                out.extend(self._step_events(rule, node, snap, memory))
        _remember(memory, snap)
        return tuple(out)

    def _step_state(self, rule: Rule, node: str, snap: Snapshot, slack: float,
                    owners: _Owners) -> list[Alert]:
        now = snap.time
        seen = {s.key: s for s in _state_subjects(rule, node, snap, owners)}
        prefix = f"{rule.name}/{node}/"
        keys = list(seen) + [k for k, t in self._tracks.items()
                             if k.startswith(prefix) and k not in seen
                             and (t.firing is not None or t.since is not None)]
        out = []
        for key in keys:
            s = seen.get(key)
            track = self._tracks.setdefault(key, _Track(node=node))
            holds = False if s is None else s.holds
            if holds is None:
                continue  # not known: nothing changes
            if not holds:
                track.since = None
                if track.firing is not None:
                    out.append(_resolved(track.firing, now, s))
                    track.firing = None
                continue
            assert s is not None
            if track.since is None:
                track.since = now
            if track.firing is not None:
                continue
            held = now - track.since
            if held + slack < rule.condition.for_s or _cooling(rule, track, now):
                continue
            alert = Alert(
                rule=rule.name, key=key, state="firing", severity=rule.severity, at=now,
                summary=f"{s.what}{_for(held)}{s.who}", node=node, gpu=s.gpu,
                since=track.since, labels=s.labels)
            track.firing, track.fired_at = alert, now
            out.append(alert)
        return out

    def _step_events(self, rule: Rule, node: str, snap: Snapshot,
                     memory: _NodeMemory) -> list[Alert]:
        now = snap.time
        out = []
        for event in _events(rule, node, snap, memory):
            track = self._tracks.setdefault(event.key, _Track(node=node))
            if _cooling(rule, track, now):
                continue
            track.fired_at = now
            out.append(Alert(rule=rule.name, key=event.key, state="firing",
                             severity=rule.severity, at=now, summary=event.summary, node=node,
                             gpu=event.gpu, since=now, labels=event.labels))
        return out


def _is_state(rule: Rule) -> bool:
    """Whether ``rule`` watches a state that holds and stops (not an event)."""
    c = rule.condition
    return c.kind != "end" and not (c.kind == "health" and c.subject in EVENT_HEALTH)


def _cooling(rule: Rule, track: _Track, now: float) -> bool:
    return track.fired_at is not None and now - track.fired_at < rule.cooldown_s


def _for(held: float) -> str:
    return f" for {format_duration(held)}" if held >= 1 else ""


def _resolved(fired: Alert, now: float, seen: _Seen | None) -> Alert:
    held = now - (fired.since if fired.since is not None else fired.at)
    back = seen.back if seen is not None else fired.summary.split(" for ")[0]
    # ``back`` says what the subject is now; a subject out of sight (out of scope, gone from
    # the snapshot) is said as it was when it fired.
    gone = "" if seen is not None else ": no longer watched"
    return Alert(rule=fired.rule, key=fired.key, state="resolved", severity=fired.severity,
                 at=now, summary=f"resolved: {back}{gone} (held {format_duration(held)})",
                 node=fired.node, gpu=fired.gpu, since=fired.since,
                 labels=seen.labels if seen is not None else fired.labels)


# ----------------------------------------------------------------- subjects


def _in_scope(scope: Scope, gpu: int | None, procs: Iterable[Process]) -> bool:
    if scope.gpus is not None and gpu not in scope.gpus:
        return False
    procs = tuple(procs)
    if scope.users is not None and not any(p.user in scope.users for p in procs):
        return False
    if scope.jobs is not None and not any(p.job is not None and p.job.id in scope.jobs
                                          for p in procs):
        return False
    return True


def _who(procs: Iterable[Process], jobs: bool = True) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The summary's ``(job 1234, alice)`` and the labels of the processes on a GPU; ``jobs``
    False leaves the job out (an alert about the job names it already)."""
    procs = tuple(procs)
    job_ids = sorted({p.job.id for p in procs if p.job is not None}) if jobs else []
    users = sorted({p.user for p in procs if p.user})
    pods = sorted({p.container.pod for p in procs if p.container and p.container.pod})
    containers = sorted({p.container.label for p in procs
                         if p.container and p.container.label and not p.container.pod})
    parts = []
    if job_ids:
        parts.append(("job " if len(job_ids) == 1 else "jobs ") + _names(job_ids))
    if pods:
        parts.append("pod " + _names(pods))
    elif containers:
        parts.append("container " + _names(containers))
    if users:
        parts.append(_names(users))
    labels = tuple((k, ",".join(v)) for k, v in
                   (("user", users), ("job", job_ids), ("pod", pods), ("container", containers))
                   if v)
    return (f" ({', '.join(parts)})" if parts else ""), labels


def _names(names: list[str]) -> str:
    more = len(names) - _NAMES_SHOWN
    return ", ".join(names[:_NAMES_SHOWN]) + (f" +{more}" if more > 0 else "")


def _value(number: float, field_name: str) -> str:
    text = f"{number:.0f}" if float(number).is_integer() else f"{number:.1f}"
    unit = next((u for suffix, u in _UNITS if field_name.endswith(suffix)), "")
    return text + unit


def _field_words(field_name: str) -> str:
    """``temperature_memory_c`` as ``temperature memory``: the field without its unit."""
    base = next((field_name[:-len(s)] for s, _ in _UNITS if field_name.endswith(s)), field_name)
    return base.replace("_", " ")


class _Owners:
    """Each GPU's ``_who`` within one sample, worked out once for all the rules that ask."""

    def __init__(self) -> None:
        self._of: dict[int, tuple[str, tuple[tuple[str, str], ...]]] = {}

    def __call__(self, dev: Device) -> tuple[str, tuple[tuple[str, str], ...]]:
        found = self._of.get(dev.index)
        if found is None:
            found = self._of[dev.index] = _who(dev.processes)
        return found


def _state_subjects(rule: Rule, node: str, snap: Snapshot, owners: _Owners) -> Iterable[_Seen]:
    c = rule.condition
    for dev in snap.devices:
        if not _in_scope(rule.scope, dev.index, dev.processes):
            continue
        who, who_labels = owners(dev)
        key = f"{rule.name}/{node}/gpu{dev.index}"
        gpu = f"GPU {dev.index}"
        if c.kind == "threshold":
            value = getattr(dev, c.subject)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                yield _Seen(key, None, dev.index, "", "", who, who_labels)
                continue
            assert c.op is not None and c.value is not None
            words, shown = _field_words(c.subject), _value(value, c.subject)
            limit = _value(c.value, "")
            yield _Seen(key, _OPS[c.op](float(value), c.value), dev.index,
                        f"{gpu} {words} {shown} {c.op} {limit}", f"{gpu} {words} {shown}",
                        who, (("value", _value(value, "")), *who_labels))
        elif c.kind == "hint":
            hint = next((h for h in snap.hints if h.device == dev.index and h.code == c.subject),
                        None)
            yield _Seen(key, hint is not None, dev.index,
                        hint.message if hint is not None else f"{gpu} {c.subject}",
                        f"{gpu} no longer {c.subject}", who, (("code", c.subject), *who_labels))
        elif c.kind == "health":
            yield _health(c.subject, dev, key, who, who_labels)
        elif c.kind == "gpu":
            if dev.status != "ok":
                yield _Seen(key, None, dev.index, "", "", who, who_labels)
                continue
            busy = bool(dev.processes)
            holds = busy if c.subject == "busy" else not busy
            yield _Seen(key, holds, dev.index, f"{gpu} {c.subject}",
                        f"{gpu} no longer {c.subject}", who, who_labels)


def _health(event: str, dev: Device, key: str, who: str,
            who_labels: tuple[tuple[str, str], ...]) -> _Seen:
    gpu = f"GPU {dev.index}"
    labels = (("code", event), *who_labels)
    if event == "gpu-lost":
        why = f": {dev.status_reason}" if dev.status_reason else ""
        return _Seen(key, dev.status == "lost", dev.index, f"{gpu} is lost{why}",
                     f"{gpu} is back ({dev.status})", who, labels)
    if dev.status != "ok":
        return _Seen(key, None, dev.index, "", "", who, labels)  # a lost GPU reports none
    hint = next((h for h in device_health(dev) if h.code in STATE_HEALTH[event]), None)
    return _Seen(key, hint is not None, dev.index,
                 hint.message if hint is not None else f"{gpu} {event}",
                 f"{gpu} no longer {event}", who, labels)


# ------------------------------------------------------------------- events


def _events(rule: Rule, node: str, snap: Snapshot, memory: _NodeMemory) -> Iterable[_Event]:
    c = rule.condition
    if c.kind == "health":  # xid, the one health event: each one the sample brought
        for dev in snap.devices:
            if not dev.xid_events or not _in_scope(rule.scope, dev.index, dev.processes):
                continue
            for event in dev.xid_events:
                xid = explain(event, snap, memory.before)
                info = xid.info
                labels = [("code", "xid"), ("xid", str(info.code)), ("xid_name", info.name),
                          ("action", info.action)]
                if xid.jobs:
                    labels.append(("job", ",".join(xid.jobs)))
                if xid.users:
                    labels.append(("user", ",".join(xid.users)))
                yield _Event(f"{rule.name}/{node}/gpu{dev.index}/xid{info.code}", dev.index,
                             f"{xid.summary()} — {info.action}", tuple(labels))
    elif c.subject == "process":
        yield from _process_ends(rule, node, snap, memory)
    else:
        yield from _job_ends(rule, node, snap, memory)


def _now_on(snap: Snapshot, memory: _NodeMemory) -> dict[tuple[int, int], Process]:
    """The processes on each GPU now; a GPU that cannot list its processes (lost, in error)
    keeps the last sample's, so that it ends nothing."""
    now = {(d.index, p.pid): p for d in snap.devices if d.status == "ok" for p in d.processes}
    unlisted = {d.index for d in snap.devices if d.status != "ok"}
    for (gpu, pid), (proc, _) in memory.procs.items():
        if gpu in unlisted:
            now[(gpu, pid)] = proc
    return now


def _ended(before: Process, after: Process | None) -> bool:
    """Whether ``before`` is gone: no such PID now, or the PID reused by a newer process."""
    if after is None:
        return True
    return before.started is not None and after.started is not None \
        and after.started != before.started


def _process_ends(rule: Rule, node: str, snap: Snapshot,
                  memory: _NodeMemory) -> Iterable[_Event]:
    if not memory.seen:
        return
    now = _now_on(snap, memory)
    for (gpu, pid), (proc, first_seen) in memory.procs.items():
        if not _ended(proc, now.get((gpu, pid))) or not _in_scope(rule.scope, gpu, (proc,)):
            continue
        who, labels = _who((proc,))
        name = f"{proc.name} " if proc.name else ""
        ran = snap.time - (proc.started if proc.started is not None else first_seen)
        how = "exited" if proc.gone else "left"
        yield _Event(f"{rule.name}/{node}/gpu{gpu}/pid{pid}", gpu,
                     f"process {name}{pid}{who} {how} GPU {gpu} after {duration(ran)}; "
                     "exit not seen",
                     (("pid", str(pid)), *labels))


def _job_ends(rule: Rule, node: str, snap: Snapshot, memory: _NodeMemory) -> Iterable[_Event]:
    if not memory.seen:
        return
    now = _now_on(snap, memory)
    running = {p.job.id for p in now.values() if p.job is not None}
    ended: dict[str, list[tuple[int, Process]]] = {}
    for (gpu, _), (proc, _) in memory.procs.items():
        if proc.job is not None and proc.job.id not in running:
            ended.setdefault(proc.job.id, []).append((gpu, proc))
    for job, on in sorted(ended.items()):
        gpus = sorted({g for g, _ in on})
        procs = [p for _, p in on]
        if not any(_in_scope(rule.scope, g, (p,)) for g, p in on):
            continue
        who, labels = _who(procs, jobs=False)
        where = ("GPU " if len(gpus) == 1 else "GPUs ") + ",".join(str(g) for g in gpus)
        yield _Event(f"{rule.name}/{node}/job{job}", gpus[0],
                     f"job {job}{who} ended: its last process left {where}; exit not seen",
                     (("job", job), *labels))


def _remember(memory: _NodeMemory, snap: Snapshot) -> None:
    """Keep what the next sample's events are told from: each GPU's processes (with when the
    engine first saw each) and its last Xid."""
    now = _now_on(snap, memory)
    memory.seen = True
    memory.procs = {key: (proc, memory.procs[key][1] if key in memory.procs
                          and not _ended(memory.procs[key][0], proc) else snap.time)
                    for key, proc in now.items()}
    memory.before = snap
