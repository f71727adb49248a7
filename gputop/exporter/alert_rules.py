"""Write gputop's alert rules as a Prometheus rule file (``gputop exporter --alert-rules``).

The same `Rule` values the alert engine evaluates become one alerting rule each, over the
names this exporter serves: the DCGM fields (``DCGM_FI_*``, on NVIDIA and Ascend GPUs) under
the names its counters file gives them, gputop's own families (``gputop_*``, on every GPU)
where DCGM has no name for the reading. A rule the served series cannot express is left out
with a ``# not expressible in PromQL`` comment that says why, never a stand-in expression.

What the engine does beyond the condition (cool-down, de-duplication, notify channels) is
Alertmanager's job in Prometheus, and the file says so.

Pure: rules in, YAML text out, written by hand (no YAML library) with every string a quoted
scalar, so no rule name or user name can break the file.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from gputop.alerts.model import Condition, Rule, Scope
from gputop.analysis.hints import BUSY_UTIL_PCT
from gputop.core.units import HZ_PER_MHZ
from gputop.exporter import own
from gputop.exporter.labels import MIG_LABELS, OWNER_LABELS
from gputop.formats import dcgm

GROUP = "gputop"
# An Xid is an event; an alert is a state: it holds this long after a new Xid shows.
EVENT_WINDOW = "5m"
ALERT_PREFIX = "Gputop"
_NOT_NODE = 'gpu!=""'
_VALUE = "{{ $value }}"  # the alert's value, in an annotation's template

# Device shares the model derives from two readings: (numerator field, denominator field).
RATIOS = {
    "memory_pct": ("memory_used_mib", "memory_total_mib"),
    "power_pct": ("power_draw_w", "power_limit_w"),
    "clock_sm_pct": ("clock_sm_mhz", "clock_sm_max_mhz"),
}

HEADER = """\
# gputop's alert rules for Prometheus, written by `gputop exporter --alert-rules` from the rules
# gputop itself evaluates (the shipped defaults and the settings file's [[alerts.rule]]).
# Load it with rule_files in prometheus.yml; check it with `promtool check rules FILE`.
# Cool-down, de-duplication and each rule's notify channels are not here: in Prometheus they are
# Alertmanager's job (group_by, repeat_interval, routes on the labels severity and rule).
# The expressions read what `gputop exporter` serves: DCGM_FI_* on NVIDIA and Ascend GPUs,
# gputop_* on every GPU. Each keeps one series per GPU: the owner labels dcgm-exporter copies a
# GPU's series under (one per Slurm job, one per pod) are aggregated away, so a job starting on a
# hot GPU does not restart the rule's `for`.
"""


class NotExpressible(Exception):
    """A rule the exporter's series cannot express; the message says why."""


@dataclass(frozen=True)
class _Expr:
    promql: str
    value: str  # {{ $value }} in words, for the description ("" where it is only 1)
    notes: tuple[str, ...] = ()  # comments above the rule


def prometheus_rules(rules: Sequence[Rule], options: own.Options | None = None) -> str:
    """Return the rule file: one group ``gputop``, one alerting rule per expressible rule (in
    ``rules``' order), a comment for each left out; ``options`` are the exporter's (its
    counters, node label and process series), so the names match what it serves."""
    options = own.Options() if options is None else options
    body: list[str] = []
    names: dict[str, int] = {}
    for rule in rules:
        try:
            expr = _expression(rule.condition, rule.scope, options)
        except NotExpressible as exc:
            body.append(f"      # not expressible in PromQL: rule {_comment(rule.name)} "
                        f"({_comment(rule.text)}): {_comment(str(exc))}\n")
            continue
        body.append(_rule(rule, expr, _alert_name(rule.name, names), options))
    rules_key = "    rules:\n" if names else "    rules: []\n"
    return "".join([HEADER, "groups:\n", f"  - name: {_q(GROUP)}\n", rules_key, *body])


def alert_name(rule_name: str) -> str:
    """Return the Prometheus alert name for a rule: ``gpu-lost`` as ``GputopGpuLost`` (a
    metric name's characters, in the CamelCase Prometheus alerts are written in)."""
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", rule_name) if p]
    return ALERT_PREFIX + "".join(p[:1].upper() + p[1:] for p in parts)


def _alert_name(rule_name: str, taken: dict[str, int]) -> str:
    """`alert_name`, with ``_2``, ``_3``… where two rule names write the same (``a-b``, ``a_b``)."""
    name = alert_name(rule_name)
    taken[name] = taken.get(name, 0) + 1
    return name if taken[name] == 1 else f"{name}_{taken[name]}"


def _rule(rule: Rule, expr: _Expr, name: str, options: own.Options) -> str:
    host = options.hostname_labels[0]
    where = f"GPU {{{{ $labels.gpu }}}} on {{{{ $labels.{host} }}}}"
    text = _literal(rule.text)
    description = f"gputop rule '{_literal(rule.name)}': {text}"
    if expr.value:
        description += f"; {expr.value}"
    lines = [f"      # rule {_comment(rule.name)}: {_comment(rule.text)}\n"]
    lines += [f"      # {_comment(note)}\n" for note in expr.notes]
    lines += [f"      - alert: {_q(name)}\n",
              f"        expr: {_q(expr.promql)}\n"]
    if rule.condition.for_s > 0:
        lines.append(f"        for: {_q(duration(rule.condition.for_s))}\n")
    lines += ["        labels:\n",
              f"          severity: {_q(rule.severity)}\n",
              f"          rule: {_q(rule.name)}\n",
              "        annotations:\n",
              f"          summary: {_q(f'{where}: {text}')}\n",
              f"          description: {_q(description)}\n"]
    return "".join(lines)


# ------------------------------------------------------------------ expressions


def _expression(c: Condition, scope: Scope, opts: own.Options) -> _Expr:
    """The condition over the served series, scoped; raises `NotExpressible`."""
    gpu = _gpu_matchers(scope)
    if c.kind == "threshold":
        expr = _threshold(c, gpu, opts)
    elif c.kind == "hint":
        on_gpu = gpu or [_NOT_NODE]  # a node's hints have gpu=""; a rule watches GPUs
        expr = _Expr(f"{_sel(own.HINT, [_eq('code', c.subject), *on_gpu])} == 1", "")
    elif c.kind == "health":
        expr = _health(c.subject, gpu, opts)
    elif c.kind == "gpu":
        expr = _gpu_state(c.subject, gpu, opts)
    elif c.kind == "end":
        raise NotExpressible(
            f"a {c.subject}'s end (and its exit code) is an event gputop sees in /proc; the "
            "exporter serves no series for it, and a series going away is not an exit")
    else:
        raise NotExpressible(f"no PromQL for a {c.kind!r} condition")
    return _scoped(expr, scope, opts)


def _threshold(c: Condition, gpu: list[str], opts: own.Options) -> _Expr:
    assert c.op is not None and c.value is not None
    op, served = c.op, _served(opts)
    if c.subject in RATIOS:
        num, den = RATIOS[c.subject]
        if num in served and den in served:
            a, b = served[num], served[den]
            return _Expr(f"100 * {_gpu_series(a, gpu)} / ({_gpu_series(b, gpu)} > 0) {op} "
                         f"{_number(c.value)}", f"{c.subject} is {_VALUE}")
        raise NotExpressible(f"{c.subject} needs {_dcgm_name(num)} and {_dcgm_name(den)}, "
                             "which the exporter's counters leave out")
    if c.subject in served:
        m = served[c.subject]
        return _Expr(f"{_gpu_series(m, gpu)} {op} {_number(c.value * m.field.scale)}",
                     f"{m.name} is {_VALUE}")
    for label, field in own.SENSORS:
        if field == c.subject:
            return _Expr(f"{_sel(own.TEMPERATURE, [_eq('sensor', label), *gpu])} {op} "
                         f"{_number(c.value)}", f"{own.TEMPERATURE} is {_VALUE}")
    for label, field in own.CLOCKS:
        if field == c.subject:
            return _Expr(f"{_sel(own.CLOCK, [_eq('clock', label), *gpu])} {op} "
                         f"{_number(c.value * HZ_PER_MHZ)}", f"{own.CLOCK} is {_VALUE}")
    if c.subject == "data_age_s":
        return _Expr(f"{_sel(own.DATA_AGE, gpu)} {op} {_number(c.value)}",
                     f"{own.DATA_AGE} is {_VALUE}")
    if c.subject == "process_sm_pct":
        if opts.top_processes < 1:
            raise NotExpressible("process_sm_pct needs the per-process series, and "
                                 "--top-processes 0 serves none")
        summed = f"sum by ({', '.join(_node_gpu(opts))}) ({_sel(own.PROCESS_SM, gpu)})"
        return _Expr(f"clamp_max(100 * {summed}, 100) {op} {_number(c.value)}",
                     f"process_sm_pct is {_VALUE}",
                     (f"process_sm_pct sums the {own.PROCESS_SM} series: the top "
                      f"{opts.top_processes} processes per GPU by memory (--top-processes)",))
    raise NotExpressible(f"the exporter serves no metric for {c.subject}"
                         + (f" (its counters leave out {_dcgm_name(c.subject)})"
                            if _dcgm_name(c.subject) != c.subject else ""))


def _health(event: str, gpu: list[str], opts: own.Options) -> _Expr:
    if event == "gpu-lost":
        return _Expr(f"{_sel(own.DEVICE_STATUS, [_eq('status', 'lost'), *gpu])} == 1", "")
    served = _served(opts)

    def series(field: str, offset: str = "") -> str:
        if field not in served:
            raise NotExpressible(f"health {event} needs {_dcgm_name(field)}, which the "
                                 "exporter's counters leave out")
        return _gpu_series(served[field], gpu, offset)

    if event == "xid":
        # DCGM_FI_DEV_XID_ERRORS holds the last Xid (0 before any). A new one shows either as a
        # series not there EVENT_WINDOW ago (dcgm-exporter's err_code label changes with the
        # code) or as a change of a series' value (no err_code label); the owners are
        # aggregated away, so a job starting on a GPU with an old Xid is no new Xid.
        now = series("xid_last")
        before = series("xid_last", EVENT_WINDOW)
        xid = served["xid_last"]
        changed = (f"max without ({', '.join(_aggregated(xid))}) "
                   f"(changes({_sel(xid.name, gpu)}[{EVENT_WINDOW}]))")
        return _Expr(f"({now} > 0 unless {before}) or "
                     f"({now} > 0 and {changed} > 0)", "Xid {{ $value }}",
                     (f"an Xid is an event: the alert holds for {EVENT_WINDOW} after a new "
                      "Xid shows, then resolves",))
    if event == "ecc-uncorrected":
        return _Expr(f"{series('ecc_errors_uncorrected_volatile')} > 0",
                     "{{ $value }} uncorrectable ECC errors since the driver loaded")
    if event == "rows-remapped":
        return _Expr(f"{series('remapped_rows_pending')} > 0 or "
                     f"{series('retired_pages_pending')} > 0", "")
    if event == "row-remap-failed":
        return _Expr(f"{series('remapped_rows_failed')} > 0", "")
    if event in ("link-degraded", "pcie-degraded"):
        # as gputop's pcie-degraded hint: narrower than its maximum, or slower while busy
        return _Expr(f"{series('pcie_width')} < {series('pcie_width_max')} or "
                     f"({series('pcie_gen')} < {series('pcie_gen_max')} and "
                     f"{series('utilization_gpu_pct')} >= {_number(BUSY_UTIL_PCT)})", "")
    raise NotExpressible(f"no served series carries the health event {event!r}")


def _gpu_state(state: str, gpu: list[str], opts: own.Options) -> _Expr:
    if state not in ("free", "busy"):
        raise NotExpressible(f"no GPU state {state!r}")
    if opts.top_processes < 1:
        raise NotExpressible(f"a GPU {state} is read off the per-process series, and "
                             "--top-processes 0 serves none")
    ok = f"{_sel(own.DEVICE_STATUS, [_eq('status', 'ok'), *gpu])} == 1"
    join = "and" if state == "busy" else "unless"
    return _Expr(f"{ok} {join} on({', '.join(_node_gpu(opts))}) {_processes([])}", "",
                 (f"a process shows in {own.PROCESS_MEMORY} or {own.PROCESS_SM} where the "
                  "driver reports its memory or SM share",))


def _scoped(expr: _Expr, scope: Scope, opts: own.Options) -> _Expr:
    """``expr`` on the GPUs holding a process of the scope's users and jobs (as the engine
    scopes), joined on the per-process series, which carry ``user`` and ``hpc_job``."""
    wanted = [(label, values) for label, values in (("user", scope.users),
                                                    ("hpc_job", scope.jobs)) if values]
    if not wanted:
        return expr
    names = " and ".join(f"{'users' if label == 'user' else 'jobs'} "
                         f"{', '.join(sorted(values))}" for label, values in wanted)
    if opts.top_processes < 1:
        return _Expr(expr.promql, expr.value, (*expr.notes, (
            f"scope {names} left out: --top-processes 0 serves no per-process series, which "
            "alone carry user and hpc_job")))
    promql = f"({expr.promql})"
    for label, values in wanted:
        promql += (f" and on({', '.join(_node_gpu(opts))}) "
                   f"{_processes([_any(label, sorted(values))])}")
    return _Expr(promql, expr.value, (*expr.notes, (
        f"scope {names}: GPUs where one of the top {opts.top_processes} processes by memory "
        "(--top-processes) matches")))


# ------------------------------------------------------------------ series


def _served(opts: own.Options) -> dict[str, dcgm.Metric]:
    """The numeric DCGM metrics the exporter serves, by the Device field they carry."""
    out: dict[str, dcgm.Metric] = {}
    for m in opts.counters:
        attr = m.field.attr
        if not m.label and not m.field.sat and attr is not None:
            out.setdefault(attr, m)
    return out


def _dcgm_name(field: str) -> str:
    return next((f.name for f in dcgm.FIELDS if f.attr == field and not f.sat), field)


def _aggregated(m: dcgm.Metric) -> tuple[str, ...]:
    """The labels aggregated away for one series per GPU: the owners, and under MIG the GPU
    instance where the field is the GPU's own, repeated on each instance."""
    return OWNER_LABELS + (MIG_LABELS if m.field.mig == "parent" else ())


def _gpu_series(m: dcgm.Metric, gpu: list[str], offset: str = "") -> str:
    shifted = f" offset {offset}" if offset else ""
    return f"max without ({', '.join(_aggregated(m))}) ({_sel(m.name, gpu)}{shifted})"


def _processes(matchers: list[str]) -> str:
    return f"({_sel(own.PROCESS_MEMORY, matchers)} or {_sel(own.PROCESS_SM, matchers)})"


def _node_gpu(opts: own.Options) -> tuple[str, ...]:
    """The labels naming one GPU of one node: Prometheus's target, the node label(s), gpu."""
    return ("instance", *opts.hostname_labels, "gpu")


def _gpu_matchers(scope: Scope) -> list[str]:
    if scope.gpus is None:
        return []
    return [_any("gpu", [str(g) for g in sorted(scope.gpus)])]


def _sel(name: str, matchers: list[str]) -> str:
    return f"{name}{{{','.join(matchers)}}}" if matchers else name


def _eq(label: str, value: str) -> str:
    return f"{label}={_promql_str(value)}"


def _any(label: str, values: Sequence[str]) -> str:
    """``label="a"``, or ``label=~"a|b"`` with each value a literal in the regex."""
    if len(values) == 1:
        return _eq(label, values[0])
    return f"{label}=~{_promql_str('|'.join(_re2_literal(v) for v in values))}"


_RE2_SPECIAL = set("\\.+*?()|[]{}^$")


def _re2_literal(text: str) -> str:
    """``text`` as a literal in a Go (RE2) regular expression: its metacharacters escaped, and
    nothing else (RE2 refuses an escaped letter or space, which Python's re.escape writes)."""
    return "".join("\\" + ch if ch in _RE2_SPECIAL else ch for ch in text)


def _promql_str(text: str) -> str:
    """``text`` as a PromQL double-quoted string (Go's escapes)."""
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _number(value: float) -> str:
    if not math.isfinite(value):
        raise NotExpressible(f"{value} is no number PromQL compares with")
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def duration(seconds: float) -> str:
    """Write seconds as a Prometheus duration: ``2m``, ``1h30m``, ``1500ms``."""
    ms = int(round(seconds * 1000))
    out = []
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000),
                       ("ms", 1)):
        n, ms = divmod(ms, size)
        if n:
            out.append(f"{n}{unit}")
    return "".join(out) or "0s"


# ------------------------------------------------------------------ YAML and templates


def _printable(ch: str) -> bool:
    return unicodedata.category(ch)[0] != "C" and ch not in "\u2028\u2029"


def _q(text: str) -> str:
    """``text`` as a YAML double-quoted scalar: quote and backslash escaped, and every
    character YAML or a reader might take for something else (controls, line and paragraph
    separators, the BOM, surrogates) written as an escape."""
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif _printable(ch):
            out.append(ch)
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def _comment(text: str) -> str:
    """``text`` fit for a one-line YAML comment: whitespace and anything unprintable as one
    space."""
    return " ".join("".join(ch if _printable(ch) else " " for ch in text).split())


def _literal(text: str) -> str:
    """``text`` as literal text in a Prometheus (Go) template: a ``{{`` in a rule's name or
    condition is printed, not run."""
    return text.replace("{{", '{{ "{{" }}')
