"""The process detail view (`enter` or `d` on a process row): one process's live history and facts.

Two plots of its trace (gputop.analysis.process_trace, read from the sampler's history): SM% and
CPU%, GPU and host memory; and what is known about it: PIDs, user, command line, start, its GPUs
and MIG instances, container, pod and job, and (on this host) what the OS says. When the process
leaves the GPUs the view says so and keeps its last plots. The signal keys act on this process
with the table's confirmation and ownership rules.

The dashboard builds the view once and shows it again for the next process (:meth:`follow`):
building its widgets, their CSS and its footer cost more than the rest of opening it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.geometry import Size
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static

from gputop.analysis.jobs import job_label
from gputop.analysis.process_trace import ProcessTrace, entries, key_of
from gputop.core.formatting import GONE, NA, duration, host_mem, mib, num
from gputop.core.model import Process, Snapshot
from gputop.core.units import MIB_PER_GIB
from gputop.core.visible import visible
from gputop.history import History
from gputop.history.fields import combined
from gputop.host import os_facts
from gputop.host.signals import START_TOLERANCE_S
from gputop.tui.actions import SIGNALS
from gputop.tui.screens import HidesDashboardKeys
from gputop.tui.widgets.footer import KeyFooter
from gputop.tui.widgets.plot import render_plot, style_rgb
from gputop.tui.widgets.processes import ProcRow, make_row
from gputop.tui.widgets.strips import TextLines


def axis_top(peak: float | None, floor: float) -> float:
    """The value axis' upper end: ``floor``, or the next 1, 2 or 5 times a power of ten above
    ``peak`` (a CPU% of 340 gets an axis to 500, 61 GiB one to 100)."""
    if peak is None or peak <= floor:
        return floor
    power = 10.0 ** math.floor(math.log10(peak))
    for step in (1, 2, 5, 10):
        if step * power >= peak:
            return step * power
    return 10 * power


class TracePlot(TextLines, Widget):
    """Two series of a process trace on one plot (plot.render_plot), its lines drawn as Strips
    of its own (TextLines): through Textual's content, three milliseconds of each open."""

    COMPONENT_CLASSES = {"plot--first", "plot--second", "plot--axis", "plot--title"}
    DEFAULT_CSS = """
    TracePlot { height: 1fr; min-height: 7; background: $surface; }
    TracePlot > .plot--first { color: $plot-util; }
    TracePlot > .plot--second { color: $plot-memory; }
    TracePlot > .plot--axis { color: $muted; }
    TracePlot > .plot--title { color: $primary; text-style: bold; }
    """

    def __init__(self, series: tuple[tuple[str, str], tuple[str, str]], unit: str,
                 scale: float = 1.0, floor: float = 100.0, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.unit = unit
        self.series = series  # (label, gputop.history.fields.PROCESS_FIELDS name), two of them
        self.scale = scale  # value per unit the axis shows (1/1024: MiB on a GiB axis)
        self.floor = floor  # the axis reaches at least this far
        self._trace: ProcessTrace | None = None
        self._text: Text | None = None

    def show(self, trace: ProcessTrace) -> None:
        self._trace = trace
        self._text = None
        self.refresh()

    def on_resize(self) -> None:
        self._text = None

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._text = None  # another theme: other colours

    def render(self) -> Text:
        if self._text is None:
            self._text = self._build()
        return self._text

    def _build(self) -> Text:
        w, h = self.size.width, self.size.height
        trace = self._trace
        if trace is None or w < 20 or h < 5:
            return Text("(too small for a plot)" if trace is not None else "")
        n = max(10, w - 8)
        classes = ("plot--first", "plot--second")
        styles = [self.get_component_rich_style(c) for c in classes]
        times, columns = trace.columns([name for _, name in self.series], points=n)
        values = [[None if v is None else v * self.scale for v in vs] for vs in columns]
        peak = max((v for vs in values for v in vs if v is not None), default=None)
        series = [(label, vs, style_rgb(style, (128, 128, 128)))
                  for (label, _), vs, style in zip(self.series, values, styles, strict=True)]
        axis = style_rgb(self.get_component_rich_style("plot--axis"), (128, 128, 128))
        body = render_plot(series, w, h - 1, axis, times,
                           top=axis_top(peak, self.floor))
        title = Text.assemble(" ", (self.series[0][0], styles[0]), "  ",
                              (self.series[1][0], styles[1]),
                              (f"  ({self.unit})", self.get_component_rich_style("plot--title")),
                              end="")
        return Text("\n", end="").join([title, body])


def describe_process(found: Sequence[tuple[int, Process]], now: float) -> list[tuple[str, str]]:
    """The facts of a process from its entries on each GPU it holds (the first one's host facts:
    they are the same on every GPU)."""
    p = found[0][1]
    gpus = ", ".join(_gpu_text(gpu, q) for gpu, q in found)
    pid = str(p.pid) + (f" (PID {p.namespace_pid} in its own namespace)"
                        if p.namespace_pid is not None else "")
    total = combined([q for _, q in found])
    fields = [
        ("PID", pid),
        ("user", p.user or NA),
        ("command", GONE if p.gone else p.command or p.name or NA),
        ("started", time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(p.started))
         if p.started else NA),
        ("running", duration(now - p.started if p.started else None)),
        ("GPU" if len(found) == 1 else "GPUs", gpus),
        ("type", p.type or NA),
        ("GPU memory", mib(total["gpu_memory_mib"])),
        ("SM", num(total["sm_pct"], ".0f", "%")),
        ("CPU", num(p.cpu_pct, ".1f", "%")),
        ("host memory", host_mem(p.host_memory_mib)),
    ]
    if p.job is not None:
        fields.append(("job", f"{p.job.scheduler} {job_label(p)}"))
    if p.container is not None:
        c = p.container
        fields += [(label, value) for label, value in (
            ("container", c.label),
            ("container id", c.id), ("runtime", c.runtime), ("pod", c.pod),
            ("pod namespace", c.pod_namespace), ("pod uid", c.pod_uid)) if value]
    return fields


def _gpu_text(gpu: int, p: Process) -> str:
    if p.gpu_instance_id is None:
        return str(gpu)
    ci = f" CI {p.compute_instance_id}" if p.compute_instance_id is not None else ""
    return f"{gpu} (MIG GI {p.gpu_instance_id}{ci})"


def os_details(pid: int, started: float | None) -> list[tuple[str, str]]:
    """What this host's kernel says of the process (``pid`` as seen here), if it is still the
    process the device reported (same start time)."""
    try:
        facts = os_facts.read(pid)
    except (FileNotFoundError, ProcessLookupError):
        return [("status", "exited (no longer running on this host)")]
    except PermissionError:
        return [("status", "no permission to inspect")]
    if started is not None and abs(facts.started - started) > START_TOLERANCE_S:
        return [("status", f"exited (PID {pid} now belongs to another process)")]
    return [("status", facts.status), ("threads", str(facts.threads)),
            ("parent", str(facts.parent)), ("nice", str(facts.nice)), ("cwd", facts.cwd or NA)]


def facts_text(fields: Sequence[tuple[str, str]], width: int, console: Console) -> Text:
    """Labels right-aligned and bold beside their values, each value wrapped in its own column
    within ``width``, as a Rich grid of two columns lays them out (the value column as wide as
    the widest value, or what the labels leave of ``width``; a long command line folds into
    it), without measuring a table on each sample. Values (a command line, a user, a container,
    a working directory) are Text made visible: never read as markup, never a control
    sequence."""
    label = max((len(key) for key, _ in fields), default=0) + 1  # and one space
    values = [Text(visible(value)) for _, value in fields]
    column = max(1, min(max((v.cell_len for v in values), default=0), width - label))
    lines: list[Text] = []
    for (key, _), value in zip(fields, values, strict=True):
        for i, line in enumerate(value.wrap(console, column, justify="left", overflow="fold")):
            # the label and the space after it as two spans, as the grid's cell and padding
            head = ((key.rjust(label - 1), "bold"), (" ", "bold")) if i == 0 else (
                (" " * label, "bold"),)
            lines.append(Text.assemble(*head, line))
    return Text("\n", end="").join(lines)


class FactsText(TextLines, Widget):
    """The facts beside the plots (facts_text), laid out again only when they or the width
    change, and the screen's layout redone only when their height does; drawn as Strips of
    its own (TextLines)."""

    DEFAULT_CSS = "FactsText { height: auto; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._fields: list[tuple[str, str]] = []
        self._text: tuple[int, Text, int] | None = None  # (width, text, lines) last laid out

    def show(self, fields: list[tuple[str, str]]) -> None:
        if fields == self._fields:
            return
        before = self._height(self.size.width)
        self._fields, self._text = fields, None
        self.refresh(layout=self._height(self.size.width) != before)

    def _build(self, width: int) -> tuple[int, Text, int]:
        if self._text is None or self._text[0] != width:
            text = facts_text(self._fields, width, self.app.console)
            self._text = (width, text, len(text.plain.split("\n")) if self._fields else 0)
        return self._text

    def _height(self, width: int) -> int:
        return self._build(width)[2] if width else 0

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self._height(width)

    def render(self) -> Text:
        return self._build(self.size.width)[1]


class ProcessView(HidesDashboardKeys, Screen[None]):
    """One process's view; it takes each sample (TakesSnapshots) and hides the table's keys."""

    BINDINGS = [
        Binding("escape,d,enter,q", "close", "back"),
        *(Binding(key, f"signal('{signal}')", signal) for key, signal, _ in SIGNALS),
    ]
    DEFAULT_CSS = """
    ProcessView { background: $background; }
    ProcessView #pv-title { background: $panel; color: $primary; text-style: bold; height: 1;
                            padding: 0 1; }
    ProcessView #pv-status { height: 1; padding: 0 1; }
    ProcessView #pv-status.-gone { color: $warning; text-style: bold; }
    ProcessView #pv-facts { width: 56; max-width: 50%; background: $surface; }
    ProcessView #pv-plots { width: 1fr; }
    """

    def __init__(self, row: ProcRow, snapshot: Snapshot, history: History,
                 local: bool, pid_here: int | None, *, readonly: bool = False) -> None:
        super().__init__()
        self.readonly = readonly  # --readonly: no signal keys here either
        self.follow(row, snapshot, history, local, pid_here)

    def follow(self, row: ProcRow, snapshot: Snapshot, history: History,
               local: bool, pid_here: int | None) -> None:
        """Show ``row``'s process from now on: its trace in ``history`` (the sampler's), its
        facts from ``snapshot``. Called before the view is shown again, so that its first frame is this one's."""
        self.row = row  # the table row it was opened from
        self.key = key_of(row.process)
        self.local = local  # the process runs on this host: the OS can be asked about it
        self.pid_here = pid_here  # its PID in this PID namespace (None: not visible here)
        self.trace = ProcessTrace(self.key, history)
        self.found = entries(snapshot, self.key) or [(row.gpu, row.process)]
        self.now = snapshot.time
        self.os_facts = os_details(pid_here, row.process.started) if local and pid_here else []
        self.gone_note: str | None = None
        if self.is_mounted:
            self._title()
            self._show()
            self.query_one("#pv-facts", VerticalScroll).scroll_home(animate=False)

    def compose(self) -> ComposeResult:
        yield Static(id="pv-title")
        yield Static(id="pv-status")
        with Horizontal():
            with VerticalScroll(id="pv-facts"):
                yield FactsText(id="pv-facts-text")
            with Vertical(id="pv-plots"):
                yield TracePlot((("SM", "sm_pct"), ("CPU", "cpu_pct")),
                                "%; CPU: of one core", id="pv-activity")
                yield TracePlot((("GPU memory", "gpu_memory_mib"),
                                 ("host memory", "host_memory_mib")),
                                "GiB", scale=1 / MIB_PER_GIB, floor=1.0, id="pv-memory")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._title()
        self._show()

    def _title(self) -> None:
        p = self.row.process
        self.query_one("#pv-title", Static).update(Text(
            f"Process {p.pid} · {visible(p.user or NA)} · "
            f"{visible(GONE if p.gone else p.command or p.name or '')}",
            no_wrap=True, overflow="ellipsis"))

    def update(self, snapshot: Snapshot) -> None:
        """One sample (the app calls this for every sample while the view is open)."""
        found = entries(snapshot, self.key)
        if found:
            self.found = found
            self.now = snapshot.time
            self.gone_note = None
        elif self.trace.gone_since is not None and self.gone_note is None:
            self.gone_note = self._gone_note()
        self._show()

    @property
    def gone(self) -> bool:
        return self.trace.gone_since is not None

    def _gone_note(self) -> str:
        when = time.strftime("%H:%M:%S", time.localtime(self.trace.gone_since))
        if self.local and self.pid_here:
            self.os_facts = os_details(self.pid_here, self.row.process.started)
            if not self.os_facts[0][1].startswith("exited"):
                return (f"released its GPUs at {when} (still running on this host); "
                        "the plots keep its last readings")
            return f"exited at {when}; the plots keep its last readings"
        return (f"gone from the GPUs at {when} (exited, or released them); the plots keep its "
                "last readings")

    def _show(self) -> None:
        status = self.query_one("#pv-status", Static)
        status.set_class(self.gone, "-gone")
        if self.gone:
            status.update(Text(f"■ {self.gone_note}", no_wrap=True, overflow="ellipsis"))
        else:
            gpus = ", ".join(str(g) for g, _ in self.found)
            status.update(Text(f"● running on GPU{'s' if len(self.found) > 1 else ''} {gpus} · "
                               f"{self.trace.samples()} samples · esc: back",
                               no_wrap=True, overflow="ellipsis"))
        fields = describe_process(self.found, self.now)
        if self.os_facts:
            fields += [("", "")] + self.os_facts
        self.query_one(FactsText).show(fields)
        for plot in self.query(TracePlot):
            plot.show(self.trace)

    # ------------------------------------------------------------------ keys
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "signal" and (self.readonly or not self.local):
            return False  # --readonly, or a process not on this host: no signal keys (the
            # app's on_key says why when one is pressed)
        return True

    def action_signal(self, name: str) -> None:
        gpu, process = self.found[0]
        self.app.signal_row(make_row(gpu, process, self.now), name)  # type: ignore[attr-defined]  # the app's interface (#25 protocols)

    def action_close(self) -> None:
        self.dismiss(None)  # the trace is a reader of the sampler's history: nothing to drop
