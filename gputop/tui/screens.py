"""Modal screens: help, signal confirmation, process details, prompts, saturation."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Input, Label, Static

from gputop.analysis.jobs import job_label
from gputop.tui import fmt
from gputop.tui.processes import ProcRow

HELP_KEY_WIDTH = 16


class HelpScreen(ModalScreen[None]):
    # `q` quits, as the help itself says, here and in every panel
    BINDINGS = [Binding("escape,question_mark", "dismiss", "close"),
                Binding("q", "app.quit", "quit")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 76; max-width: 100%; height: 90%; border: round $primary;
                                  background: $surface; padding: 0 1; }
    """

    def __init__(self, rows: list[tuple[str, str]]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        text = Text(end="")
        text.append("gputop keys\n\n", "bold")
        for keys, what in self.rows:
            if not keys:
                text.append(f"\n{what}\n", "bold")
                continue
            if len(keys) >= HELP_KEY_WIDTH:  # a long key list gets its own line
                text.append(f"  {keys}\n", "bold")
                keys = ""
            text.append(f"  {keys:<{HELP_KEY_WIDTH}}", "bold")
            text.append(f"{what}\n")
        text.append("\nctrl+p opens the command palette with the same actions. Esc closes.")
        with VerticalScroll():
            yield Static(text, id="help-text")

    def action_dismiss(self) -> None:
        self.dismiss(None)


class ConfirmSignal(ModalScreen[bool]):
    BINDINGS = [Binding("y", "answer(True)", "yes"), Binding("n,escape", "answer(False)", "no")]
    DEFAULT_CSS = """
    ConfirmSignal { align: center middle; }
    ConfirmSignal > Vertical { width: 70; max-width: 100%; height: auto; border: thick $error;
                               background: $surface; padding: 1 2; }
    ConfirmSignal Horizontal { height: auto; margin-top: 1; }
    ConfirmSignal Button { margin-right: 2; }
    """

    def __init__(self, signal_name: str, row) -> None:
        super().__init__()
        self.signal_name = signal_name
        self.row = row  # a ProcRow, or a GroupRow: then every process of the group
        group = getattr(row, "group", None)
        self.pids = group.pids if group is not None else [row.process.pid]

    def _lines(self) -> tuple[str, str]:
        group = getattr(self.row, "group", None)
        if group is None:
            p = self.row.process
            return (f" to process {p.pid}?",
                    f"{p.user or '?'} on GPU {self.row.gpu}: {p.command or p.name or '?'}")
        n = len(self.pids)
        return (f" to {n} process{'es' if n != 1 else ''} of {group.label}?",
                "PIDs " + ", ".join(str(pid) for pid in self.pids))

    def compose(self) -> ComposeResult:
        question, detail = self._lines()
        with Vertical():
            yield Label(Text.assemble(("Send ", ""), (self.signal_name, "bold"), (question, "")))
            # every PID shows: the list wraps rather than hiding some
            yield Label(Text(detail, overflow="fold"), id="targets")
            with Horizontal():
                yield Button(f"Yes, send {self.signal_name} (y)", variant="error", id="yes")
                yield Button("No (n / esc)", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


def describe_process(row: ProcRow, now: float) -> list[tuple[str, str]]:
    """Fields for the detail view: the sample's, then what the OS says if it is local."""
    p = row.process
    fields = [
        ("GPU", str(row.gpu)),
        ("PID", str(p.pid)),
        ("user", p.user or fmt.NA),
        ("name", p.name or fmt.NA),
        ("type", p.type or fmt.NA),
        ("GPU memory", fmt.mib(p.gpu_memory_mib)),
        ("SM", fmt.num(p.sm_pct, ".0f", "%")),
        ("CPU", fmt.num(p.cpu_pct, ".1f", "%")),
        ("host memory", fmt.host_mem(p.host_memory_mib)),
        ("started", time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(p.started))
         if p.started else fmt.NA),
        ("running", fmt.duration(now - p.started if p.started else None)),
        ("command", p.command or fmt.NA),
    ]
    if p.job is not None:
        fields.append(("job", f"{p.job.scheduler} {job_label(p)}"))
    if p.container is not None:
        c = p.container
        fields += [(label, value) for label, value in (
            ("container", c.name or (c.id[:12] if c.id else None)),
            ("container id", c.id), ("runtime", c.runtime), ("pod", c.pod),
            ("pod namespace", c.pod_namespace), ("pod uid", c.pod_uid)) if value]
    if p.namespace_pid is not None:
        fields.append(("PID in its namespace", str(p.namespace_pid)))
    return fields


def os_details(pid: int) -> list[tuple[str, str]]:
    import psutil

    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            return [("status", proc.status()), ("threads", str(proc.num_threads())),
                    ("parent", str(proc.ppid())), ("nice", str(proc.nice())),
                    ("cwd", _safe(proc.cwd)), ("cmdline", " ".join(proc.cmdline()) or fmt.NA)]
    except psutil.NoSuchProcess:
        return [("status", "exited (no longer running on this host)")]
    except psutil.AccessDenied:
        return [("status", "no permission to inspect")]


def _safe(getter) -> str:
    try:
        return getter()
    except Exception:  # AccessDenied on another user's cwd
        return fmt.NA


class ProcessDetail(ModalScreen[None]):
    BINDINGS = [Binding("escape,enter", "dismiss", "close"), Binding("q", "app.quit", "quit")]
    DEFAULT_CSS = """
    ProcessDetail { align: center middle; }
    ProcessDetail > VerticalScroll { width: 90; max-width: 100%; height: auto; max-height: 90%;
                                     border: round $primary; background: $surface; padding: 0 1; }
    """

    def __init__(self, row: ProcRow, now: float, local: bool) -> None:
        super().__init__()
        self.row = row
        self.now = now
        self.local = local

    def compose(self) -> ComposeResult:
        text = Text(end="")
        text.append(f"Process {self.row.process.pid}\n\n", "bold")
        fields = describe_process(self.row, self.now)
        if self.local:
            fields += [("", "")] + os_details(self.row.process.pid)
        for key, value in fields:
            if not key:
                text.append("\n")
                continue
            text.append(f"{key:>12}  ", "bold")
            text.append(f"{value}\n")
        with VerticalScroll():
            yield Static(text, id="detail-text")

    def action_dismiss(self) -> None:
        self.dismiss(None)


class Prompt(ModalScreen[str | None]):
    """A one-line question (the replay seek)."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = """
    Prompt { align: center bottom; }
    Prompt > Vertical { width: 60; max-width: 100%; height: auto; background: $surface;
                        border: round $primary; }
    """

    def __init__(self, question: str, value: str = "") -> None:
        super().__init__()
        self.question = question
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question)
            yield Input(self.value, id="prompt-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class SaturationScreen(Screen[None]):
    BINDINGS = [Binding("escape,s", "close", "back to the dashboard")]
    DEFAULT_CSS = """
    SaturationScreen > VerticalScroll { background: $background; }
    SaturationScreen #sat-title { background: $panel; color: $primary; text-style: bold;
                                  height: 1; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        from gputop.tui.saturation import SaturationPanel

        yield Static("Saturation: how busy the GPUs really are (s / esc: back)", id="sat-title")
        with VerticalScroll():
            yield SaturationPanel(id="saturation")

    def on_mount(self) -> None:
        sampler = getattr(self.app, "sampler", None)
        if sampler is not None:  # GPM on every tick while the panel is open
            sampler.want("saturation-panel", {"saturation": 0.0})

    def on_unmount(self) -> None:
        sampler = getattr(self.app, "sampler", None)
        if sampler is not None:
            sampler.unwant("saturation-panel")

    def update(self, snapshot) -> None:
        from gputop.tui.saturation import SaturationPanel

        panel = self.query_one(SaturationPanel)
        if hasattr(panel, "update_snapshot"):
            sampler = getattr(self.app, "sampler", None)
            history = sampler.history.snapshots() if sampler is not None else None
            panel.update_snapshot(snapshot, history)
        else:
            panel.update(snapshot)

    def action_close(self) -> None:
        self.dismiss(None)
