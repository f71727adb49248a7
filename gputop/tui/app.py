"""The live dashboard (`gputop` with no command).

The sampler samples on its own long-lived thread; each snapshot reaches the UI as a message, so a
slow backend (npu-smi can take seconds) never freezes the keys, and the header says when samples
are late. Widgets repaint only what changed (see gpu.py and processes.py).
"""

from __future__ import annotations

import gc
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, cast

from textual.app import ComposeResult, SystemCommand
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.theme import Theme
from textual.widgets import Input

from gputop.analysis.accounting import end_line
from gputop.analysis.waste import WasteLedger
from gputop.analysis.xid import XidLog
from gputop.backends.base import Backend
from gputop.config.dashboard import DashboardConfig
from gputop.core import budget
from gputop.core.bounds import HISTORY_DEFAULT_S
from gputop.core.lifeline import Lifeline
from gputop.core.model import Snapshot
from gputop.core.visible import visible
from gputop.history import History
from gputop.host.load import HostFacts, HostReader
from gputop.sampler import Sampler
from gputop.tui import actions
from gputop.tui.actions import Action
from gputop.tui.screens import HidesDashboardKeys, TakesSnapshots
from gputop.tui.shell import ShellApp
from gputop.tui.themes import all_themes, check_theme
from gputop.tui.widgets.dashboard import WANTS as DASHBOARD_WANTS
from gputop.tui.widgets.dashboard import DashboardView
from gputop.tui.widgets.footer import KeyFooter
from gputop.tui.widgets.header import Header
from gputop.tui.widgets.hostline import HostLine
from gputop.tui.widgets.processes import FILTER_MATCHES, ProcessTable, ProcRow

if TYPE_CHECKING:
    from textual.timer import Timer

    from gputop.alerts.model import Alert
    from gputop.alerts.notify.dispatch import DeliveryEvent
    from gputop.alerts.runtime import AlertConfig, Alerting
    from gputop.backends.controls import ReplayControls
    from gputop.tui.alerting import DeliveryTrouble, TerminalBytes
    from gputop.tui.screens.alerts import AlertsScreen

if TYPE_CHECKING:  # imported when first used, for the start-up time
    from gputop.query.recorder import Recording
    from gputop.tui.widgets.hintbar import HintBar

INTERVALS = (0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0)
# What the channels get to deliver what they hold once the dashboard exits: it runs while
# Textual gives the terminal back, and run_app waits for it after, well within the lifeline's
# grace (gputop.core.lifeline.GRACE_S); a channel that hangs (a webhook that never answers)
# loses its alerts, counted, and keeps nobody waiting.
ALERTS_CLOSE_S = 0.5
JOB_END_TOAST_S = 60.0  # a job's end line stays a minute: long enough to be read, then out of the way
ALERTS_STOP_GRACE_S = 0.3  # past the deadline: a hung channel stopped (dispatch._STOP_GRACE_S)
REPLAY_ACTIONS = actions.names(actions.DASHBOARD, group=actions.REPLAY)
# What --readonly takes away: everything that changes something, a process (signals) or a
# file (a recording, the palette's screenshot). A read-only dashboard, a web viewer's above
# all, writes nothing.
CHANGING_ACTIONS = actions.names(actions.DASHBOARD, changes=True) | {"screenshot"}
# Their keys, each with what it does: a read-only dashboard says which it refused (#27).
CHANGING_KEYS = {name: action.description for action in actions.DASHBOARD if action.changes
                 for key in action.bound for name in key.keys.split(",")}
# What acts on the dashboard's GPUs and process table, out of place on a screen over it.
DASHBOARD_ACTIONS = actions.names(actions.DASHBOARD, on_table=True)


class SampleReady(Message):
    def __init__(self, snapshot: Snapshot, wants=None, host=None) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.wants = wants  # what the tick read (gputop.core.budget; None: everything)
        self.host = host  # gputop.host.load.HostFacts read on the same thread, when due


class SampleFailed(Message):
    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error


def next_interval(current: float, step: int) -> float:
    if step > 0:
        bigger = [i for i in INTERVALS if i > current + 1e-9]
        return bigger[0] if bigger else current
    smaller = [i for i in INTERVALS if i < current - 1e-9]
    return smaller[-1] if smaller else current


class GputopApp(ShellApp):
    TITLE = "gputop"
    app_themes: list[str]  # set by install_themes
    theme_warnings: list[str]
    CSS = """
    Screen { background: $background; layers: base overlay; }
    /* a modal (help, a signal's confirmation, a prompt) over the dimmed view, not a blank screen */
    ModalScreen { background: $background 60%; }
    #filter { display: none; height: 3; border: round $primary; background: $surface; }
    #filter.-shown { display: block; }
    KeyFooter { background: $panel; }
    .-nocolor ProcessTable > .proctable--cursor { text-style: bold reverse; }
    """
    ENABLE_COMMAND_PALETTE = True
    COMMAND_PALETTE_BINDING = "ctrl+p"

    KEY_HELP = actions.DASHBOARD
    BINDINGS = actions.bindings(KEY_HELP)

    def __init__(
        self,
        backend: Backend,
        *,
        interval: float = 1.0,
        devices: Sequence[int] | None = None,
        theme: str | None = None,
        readonly: bool = False,
        themes: Iterable[Theme] | None = None,
        theme_warnings: Sequence[str] = (),
        autostart: bool = True,
        analyze=None,
        sampler: Sampler | None = None,
        record_fields: str | None = None,
        record_dir: str = ".",
        first: Snapshot | None = None,
        columns: Sequence[str] | None = None,
        sort: str | None = None,
        sort_descending: bool | None = None,
        history_s: float = HISTORY_DEFAULT_S,
        alerts: Callable[[], AlertConfig] | None = None,
    ) -> None:
        super().__init__(theme=theme, themes=themes, theme_warnings=theme_warnings)
        self.backend = backend
        self.readonly = readonly
        self.autostart = autostart
        if analyze is None:
            from gputop.analysis.pipeline import default_analyzer

            analyze = default_analyzer()
        # the idle ledger and job accounting of the sampler the app makes (docs/waste.md)
        self.waste: WasteLedger | None = WasteLedger() if sampler is None else None
        self.sampler = sampler or Sampler(backend, interval=interval, devices=devices,
                                          analyze=analyze,
                                          annotate=self.waste.annotate if self.waste else None,
                                          history=History(span_s=history_s, interval=interval))
        self.sampler.want("dashboard", DASHBOARD_WANTS)
        self.snapshot: Snapshot | None = None
        self.xids = XidLog()  # the Xid events seen, explained (the `x` screen)
        self._first = first  # taken before Textual started, shown at mount
        self.recorder: Recording | None = None
        self.record_fields = record_fields  # None: the recorder's default set
        self.record_dir = record_dir
        # the process table's columns and order, from the settings file (gputop.config.settings)
        self.table_layout = (columns, sort, sort_descending)
        self.record_path: str | None = None
        self.record_samples = 0
        self.last_sample_mono: float | None = None
        self.late_after_s = 3.0  # the header says "no sample for Ns" past this
        self._late_check: Timer | None = None  # when the next sample is late (see _expect_sample)
        self.first_frame_s: float | None = None
        self._t0 = time.monotonic()
        self._local_host = socket.gethostname()
        self._notices: dict = {}
        # this machine's load, read on the sampler's thread; a replayed log is another node
        self.host_reader = None if self.player is not None else HostReader()
        # The alert rules at work on every sample, read and built after the first frame (None:
        # no alerts, as in a replay: its samples happened long ago, their alerts went out then).
        self.alert_config = alerts if self.player is None else None
        self.alerting: Alerting | None = None
        self._delivery_trouble: set[tuple[str, str]] = set()  # (channel, cause) said already
        self._alerts_closing: threading.Thread | None = None
        # after the close: True if every channel delivered what it held in time
        self.alerts_delivered: bool | None = None

    # ------------------------------------------------------------------ setup
    def compose(self) -> ComposeResult:
        from gputop.tui.widgets.hintbar import HintBar

        # Every line above the cards is there from the first frame, so that nothing moves
        # when the host facts or a hint arrive (#26); a replayed node has no host line here.
        yield Header(id="header")
        if self.host_reader is not None:
            yield HostLine(id="host")
        yield HintBar(id="hints")
        yield DashboardView(id="dashboard")
        yield Input(placeholder=f"filter: {FILTER_MATCHES} (enter: keep, esc: clear)",
                    id="filter")
        yield KeyFooter()

    @property
    def dashboard(self) -> DashboardView:
        return self.query_one("#dashboard", DashboardView)

    @property
    def header(self) -> Header:
        return self.query_one("#header", Header)

    @property
    def player(self) -> ReplayControls | None:
        """Return the replayed log's controls (play, pause, step, seek, speed); None for a live
        backend."""
        return self.backend.player

    def on_mount(self) -> None:
        info = self.backend.info()
        self.header.set(host=info.host, backend=info.backend, driver=info.driver_version,
                        cuda=info.cuda_version, interval=self.sampler.interval,
                        readonly=self.readonly,
                        gpus=len(self.sampler.devices or info.devices))
        self.dashboard.set_interval(self.sampler.interval)
        self.dashboard.attach(self.sampler.history)
        table = self.query_one(ProcessTable)
        columns, sort, descending = self.table_layout
        if columns is not None:
            table.show_only(columns)
        if sort is not None:
            table.sort_as(sort, descending)
        table.focus()
        self.screen.set_class(self.no_color, "-nocolor")  # emphasis without colour, see CSS
        self.warn_of_themes()
        if self.backend.fallback_reason:
            self.notify(f"No accelerator found ({self.backend.fallback_reason}): showing the "
                        "simulator.", title="SIMULATED", severity="warning", timeout=12)
        self._warn_of_limits_left_changed()
        if self._first is not None:
            self.show_snapshot(self._first)
        self.sampler.subscribe(self._sample_from_thread, self._error_from_thread)
        if self.autostart:
            self.sampler.start(self._first)
        self.call_after_refresh(self._first_frame)
        self.screen_change_signal.subscribe(self, self._want_rates)

    def _warn_of_limits_left_changed(self) -> None:
        """An advisor run that was killed mid-sweep left some GPUs slower than they should be:
        the first thing to know, on whichever screen the user opens first."""
        from gputop.backends.base import CAP_POWER_LIMIT

        if CAP_POWER_LIMIT not in self.backend.capabilities:
            return
        from gputop.advisor.journal_files import journal_files

        if not journal_files():  # the usual case: no journal to read, and its reader not loaded
            return
        from gputop.advisor import journal

        errors: list[str] = []
        left = journal.leftovers(self.backend, errors=errors)
        if left:
            warning = journal.leftover_warning(left)
            if not self.readonly:
                warning = warning.replace("Run `gputop advise --restore`",
                                          "Press a then r, or run `gputop advise --restore`,")
            errors.append(warning)
        for message in errors:
            self.notify(message, title="power limits", severity="error", timeout=60)

    def _first_frame(self) -> None:
        if self.first_frame_s is None:
            self.first_frame_s = time.monotonic() - self._t0
            # Everything built so far (Textual, the DOM, themes) lives as long as the app: keep
            # the cyclic garbage collector from walking it again on every tick's collections.
            # The alerts are built here, after the first frame: their channels load what no
            # first frame needs (http, ssl, email, json: tests/support/start_imports.py).
            self._start_alerting()
            # What the start left as cyclic garbage (styles applied and replaced, the classes
            # dataclasses rebuilt) goes first: frozen, it would be held as long as the app
            # (0.45 MB at 8 GPUs, one collection of 12-15 ms, after the first frame).
            gc.collect()
            gc.freeze()

    def on_unmount(self) -> None:
        self._close_alerting()
        self.sampler.stop(timeout=0.5)
        self._stop_recording(quiet=True)

    # ------------------------------------------------------------------ samples
    def _sample_from_thread(self, snap: Snapshot) -> None:
        host = self.host_reader.due() if self.host_reader is not None else None
        self.post_message(SampleReady(snap, self.sampler.latest_wants, host))

    def _error_from_thread(self, exc: BaseException) -> None:
        self.post_message(SampleFailed(exc))

    def on_sample_ready(self, message: SampleReady) -> None:
        if self.leaving or self._exit_renderables or not self.is_running or not self.screen_stack:
            return
        try:
            self.show_snapshot(message.snapshot, message.wants)
            if message.host is not None:
                self.show_host(message.host)
        except NoMatches:  # a sample that arrives while the app shuts down
            pass

    def show_snapshot(self, snap: Snapshot, wants=None) -> None:
        """Put one snapshot on screen (the sampler's messages and tests come through here).
        ``wants``: what its tick read; a recording takes only samples holding all its fields."""
        self.snapshot = snap
        self.xids.add(snap)  # each Xid explained as it comes, for the events screen (`x`)
        if self.alerting is not None:
            self._observe_alerts(snap)
        if self.waste is not None:
            for ended in self.waste.accounts.drain_ended():  # a job's last process left
                self.notify(end_line(ended), title="job ended", timeout=JOB_END_TOAST_S)
        self.last_sample_mono = time.monotonic()
        self._expect_sample()
        self.dashboard.update(snap, now=snap.time)
        cast("HintBar", self.query_one("#hints")).show(snap.hints)
        if self.recorder is not None and budget.covers(wants, self.recorder.wants):
            try:
                # nvidia-smi's `count` is the node's GPUs, also when -i picked fewer
                self.recorder.write(snap, len(self.backend.info().devices))
                self.record_samples += 1
            except Exception as exc:  # a full disk must not take the dashboard down
                self.notify(f"recording stopped: {exc}", severity="error")
                self._stop_recording(quiet=True)
        replay = self._replay_text()
        self.header.set(clock=snap.time, gpus=len(snap.devices), error=None, stale_s=None,
                        recording=self._recording_text(), replay=replay)
        # every screen over the dashboard that shows samples, also under a dialog (a process
        # view under its signal confirmation keeps its trace whole)
        for screen in self.screen_stack[1:]:
            if not isinstance(screen, TakesSnapshots):
                continue
            try:
                screen.update(snap)
            except Exception as exc:  # another helper's screen must not break sampling
                self.log.error(f"screen update failed: {exc}")

    def on_dashboard_view_rates_shown(self, message: DashboardView.RatesShown) -> None:
        self._want_rates()

    def _want_rates(self, *_) -> None:
        """The wide cards' rates are read from the device only while they are on screen: laid
        out, and the dashboard not covered by a full screen (a dialog leaves it in view)."""
        from textual.screen import ModalScreen

        from gputop.tui.text.wants import WIDE_CARDS

        if not self.screen_stack:
            return  # shutting down
        screen = self.screen_stack[-1]
        covered = screen is not self.screen_stack[0] and not isinstance(screen, ModalScreen)
        try:
            shown = self.dashboard.rates and not covered
        except NoMatches:  # the dashboard is already gone
            return
        if shown:
            self.sampler.want("wide-cards", WIDE_CARDS)
        else:
            self.sampler.unwant("wide-cards")

    def show_host(self, facts: HostFacts) -> None:
        self.query_one("#host", HostLine).show(facts)

    def on_sample_failed(self, message: SampleFailed) -> None:
        self.header.set(error=f"sampling failed: {message.error}")

    def _expect_sample(self, wait: float | None = None) -> None:
        """Look again ``wait`` seconds from now (default: when the next sample is late) and
        say in the header how late it is. One timer, moved on by each sample: a timer every
        second woke the app at the sampler's own tick, each thread taking the interpreter
        from the other through the sampler's reads (#26)."""
        if not self.autostart:
            return  # nobody samples on a schedule (tests drive ticks): nothing can be late
        if self._late_check is not None:
            self._late_check.stop()
        self._late_check = self.set_timer(self._late_after() if wait is None else wait,
                                          self._check_late)

    def _late_after(self) -> float:
        """Return the seconds without a sample after which the header says so."""
        return max(self.late_after_s, 3 * self.sampler.interval)

    def _check_late(self) -> None:
        self._late_check = None
        if self.sampler.paused or self.last_sample_mono is None:
            return  # a resume or the first sample looks again
        late, late_after = time.monotonic() - self.last_sample_mono, self._late_after()
        if late < late_after:  # the interval grew since the look was set
            self._expect_sample(late_after - late)
            return
        self.header.set(stale_s=late)
        self._expect_sample(1.0)  # the header counts the seconds

    # ------------------------------------------------------------------ general actions
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in DASHBOARD_ACTIONS and isinstance(self.screen, HidesDashboardKeys):
            return False  # the dashboard is not on screen: neither in the footer nor live
        if action in CHANGING_ACTIONS and self.readonly:
            return False  # --readonly: the action does not exist (on_key says so)
        if action == "signal" and self.snapshot is not None and not self._processes_are_local():
            return False  # simulated, replayed or remote processes: the footer offers no k
        if action in REPLAY_ACTIONS and self.player is None:
            return False
        if action == "alerts" and self.alerting is None:
            return False  # off (a replay), or not built yet (the first frame comes first)
        return super().check_action(action, parameters)

    def help_heading(self, group: str) -> str:
        """Return ``group``'s heading; the process table's says how it groups, when it does."""
        from gputop.tui.widgets.grouped import GUESS_NOTE, MODE_NOTE

        grouping = self.query_one(ProcessTable).grouping
        if grouping == "process" or group != actions.PROCESSES:
            return group
        return f"{group}, {MODE_NOTE[grouping]}" + (GUESS_NOTE if grouping == "job" else "")

    def help_text(self, action: Action) -> str:
        """Return what ``action``'s keys do, as they act on group rows when the table groups."""
        from gputop.tui.widgets.grouped import GROUP_KEY_HELP

        if self.query_one(ProcessTable).grouping != "process":
            return GROUP_KEY_HELP.get(action.keys, action.description)
        return action.description

    def offers(self, action: Action) -> bool:
        return super().offers(action) and not (
            (action.name in REPLAY_ACTIONS and self.player is None)
            or (action.name == "alerts" and self.alert_config is None))

    def action_pause(self) -> None:
        paused = not self.sampler.paused
        self.sampler.pause(paused)  # a replay's own play/pause is `space`
        self.header.set(paused=paused, stale_s=None)
        if not paused:
            self._expect_sample()

    def action_interval(self, step: int) -> None:
        new = next_interval(self.sampler.interval, step)
        if new != self.sampler.interval:
            self.sampler.set_interval(new)
            self.dashboard.set_interval(new)
            message = f"sampling every {new:g}s"
        else:
            message = (f"sampling every {new:g}s: the "
                       f"{'slowest' if step > 0 else 'fastest'} there is")
        self.header.set(interval=new)
        self.notify_once("interval", message, timeout=2)

    def notify_once(self, key: str, message: str, **kwargs) -> None:
        """A notice that replaces the last one with the same ``key`` instead of piling up."""
        from textual.notifications import Notification, Notify

        old = self._notices.pop(key, None)
        if old is not None:
            try:
                self._unnotify(old)
            except KeyError:  # it timed out already
                pass
        notice = Notification(message, kwargs.get("title", ""), kwargs.get("severity", "information"),
                              kwargs.get("timeout", self.NOTIFICATION_TIMEOUT))
        self._notices[key] = notice
        self.post_message(Notify(notice))

    def action_select_gpu(self, step: int) -> None:
        self.dashboard.select_gpu(step=step)
        self._view_note()

    def action_toggle_plot(self) -> None:
        self.dashboard.toggle_plot()

    def action_only_gpu(self) -> None:
        dash = self.dashboard
        dash.set_only_selected(not dash.only_selected)
        self._view_note()

    def action_sideways(self, direction: int) -> None:
        self.query_one(ProcessTable).scroll_sideways(direction)

    def action_sort(self, column: str) -> None:
        self.query_one(ProcessTable).sort_by(column)

    # ------------------------------------------------------------------ filter
    def filter_changed(self, text: str) -> None:
        self.query_one(ProcessTable).set_filter(text.strip())

    def filter_kept(self) -> None:
        self.query_one(ProcessTable).focus()
        self._view_note()

    def filter_to_clear(self) -> bool:
        return self.filter_box.has_class("-shown") or bool(self.query_one(ProcessTable).needle)

    def _view_note(self) -> None:
        """What hides processes stays in the header for as long as it applies."""
        table = self.query_one(ProcessTable)
        parts = []
        if table.needle:
            parts.append(f"filter {table.needle!r}")
        if table.only_gpu is not None:
            parts.append(f"GPU {table.only_gpu} only (o)")
        if table.grouping != "process":
            from gputop.tui.widgets.grouped import MODE_NOTE

            parts.append(MODE_NOTE[table.grouping])
        self.header.set(view=" · ".join(parts) + " (esc clears)" if table.needle
                        else " · ".join(parts) or None)

    # ------------------------------------------------------------------ processes
    def action_group(self) -> None:
        from gputop.analysis.groups import next_mode

        table = self.query_one(ProcessTable)
        table.set_grouping(next_mode(table.grouping))
        self._view_note()

    def _selected_row(self) -> ProcRow | None:
        return self.query_one(ProcessTable).selected

    def action_details(self) -> None:
        row = self._selected_row()
        if row is not None:
            self._open_details(row)

    def on_process_table_open(self, message: ProcessTable.Open) -> None:
        self._open_details(message.row)

    def _open_details(self, row: ProcRow) -> None:
        from gputop.host.signals import local_pid
        from gputop.tui.screens.process_view import ProcessView

        if not isinstance(row, ProcRow):
            self.notify("details are per process: press b until the table shows processes",
                        severity="warning")
            return
        if row.process.outside_pid_namespace or self.snapshot is None:
            self.notify("no details: these processes are outside gputop's PID namespace",
                        severity="warning")
            return
        local = self._processes_are_local()
        shown = (row, self.snapshot, self.sampler.history, local,
                 local_pid(row.process) if local else None)
        self.show_kept("process", ProcessView,
                        lambda: ProcessView(*shown, readonly=self.readonly),
                        lambda view: view.follow(*shown))  # see ProcessView.follow

    def on_key(self, event) -> None:
        """Say why a signal key did nothing: the footer no longer offers it where it cannot
        work (#27: `k` was silent in read-only mode and offered on the simulator)."""
        if isinstance(self.focused, Input):
            return
        if self.readonly and event.key in CHANGING_KEYS:
            self.notify(f"read-only: {CHANGING_KEYS[event.key]} is disabled", severity="warning")
        elif event.key in actions.SIGNAL_KEYS and self.snapshot is not None \
                and not self._processes_are_local():
            self.notify("these processes are not on this machine (simulated, replayed or "
                        "remote): nothing to signal", severity="warning")

    def _processes_are_local(self) -> bool:
        from gputop.host.signals import NOT_LOCAL_BACKENDS

        snap = self.snapshot
        return (snap is not None and snap.backend not in NOT_LOCAL_BACKENDS
                and snap.host == self._local_host)

    def action_signal(self, name: str) -> None:
        self.signal_row(self._selected_row(), name)

    def signal_row(self, row, name: str) -> None:
        """``name`` to a row's process (or each of a group row's), after the checks and the
        confirmation; the process table and the process view both come here."""
        if self.readonly:  # unreachable through keys (check_action), kept as a guard
            self.notify("read-only: sending signals is disabled", severity="warning")
            return
        if row is None:
            self.notify("no process selected", severity="warning")
            return
        if not self._processes_are_local():
            self.notify("these processes are not on this machine (simulated or remote): "
                        "nothing to signal", severity="warning")
            return
        from gputop.host.signals import local_pid, refusal
        from gputop.tui.screens.modals import ConfirmSignal

        if not isinstance(row, ProcRow):
            self._signal_group(row, name)
            return
        pid = local_pid(row.process)
        if pid is None:
            self.notify("this process is outside gputop's PID namespace: run gputop on the host "
                        "(or with --pid=host) to signal it", severity="error")
            return
        reason = refusal(pid, row.process.started, owner_only=self.is_web)
        if reason is not None:
            self.notify(reason, severity="error")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._send_signal(row, name)

        self.push_screen(ConfirmSignal(name, row), answered)

    def _signal_group(self, row, name: str) -> None:
        """The single-process rules for each process of a group row; all or none."""
        from gputop.host.signals import group_refusal, send_group
        from gputop.tui.screens.modals import ConfirmSignal

        processes = row.group.processes
        reason = group_refusal(processes, owner_only=self.is_web)
        if reason is not None:
            self.notify(f"not signalling {visible(row.group.label)}: {reason}", severity="error")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                outcome = send_group(processes, name, owner_only=self.is_web)
                self.notify(outcome.message, severity=outcome.severity)

        self.push_screen(ConfirmSignal(name, row), answered)

    def _send_signal(self, row: ProcRow, name: str) -> None:
        from gputop.host.signals import local_pid, send

        outcome = send(local_pid(row.process) or row.process.pid, name, row.process.started,
                       owner_only=self.is_web)
        self.notify(outcome.message, severity=outcome.severity)

    # ------------------------------------------------------------------ other screens
    def action_saturation(self) -> None:
        from gputop.tui.screens.saturation import SaturationScreen

        if isinstance(self.screen, SaturationScreen):
            self.screen.action_close()
            return

        def at_hinted_gpu() -> None:  # the panel opens at the GPU the hint bar names
            hinted = cast("HintBar", self.query_one("#hints")).device
            if hinted is not None:
                self.dashboard.select_gpu(hinted)

        def build() -> SaturationScreen:
            at_hinted_gpu()
            return SaturationScreen(self.sampler, self.snapshot)

        def again(screen: SaturationScreen) -> None:
            at_hinted_gpu()
            screen.opened(self.snapshot)

        self.show_kept("saturation", SaturationScreen, build, again)

    def action_xid_events(self) -> None:
        from gputop.tui.screens.xid_events import XidEventsScreen

        if isinstance(self.screen, XidEventsScreen):
            self.pop_screen()
            return
        self.push_screen(XidEventsScreen(self.xids, self.snapshot.time if self.snapshot else 0.0))

    # ------------------------------------------------------------------ alerts
    def _start_alerting(self) -> None:
        """Put the alert rules to work: the engine with its journal read, the channels (the
        terminal's write through this app), then the sample on screen is the first observed."""
        if self.alert_config is None or self.alerting is not None or self.leaving:
            return
        from dataclasses import replace

        from gputop.alerts.runtime import Alerting
        from gputop.core.errors import UsageError
        from gputop.tui.alerting import AppTerminal

        try:
            config = self.alert_config()
            if self.backend.fallback_reason:
                # No device was found and this is the simulator: its alerts show here, and
                # never reach a channel or the journal that expect a real GPU's.
                config = replace(config, channels=(), journal=None)
            self.alerting = Alerting(
                config, node=self.backend.info().host, terminal=AppTerminal(self),
                on_event=self._delivery_event_from_thread,
                on_error=self._alert_journal_failed)
        except UsageError as exc:  # a journal that cannot be read (the rest was checked)
            self.notify(f"alerts are off: {exc}", title="alerts", severity="error", timeout=30)
            return
        if self.snapshot is not None:
            self._observe_alerts(self.snapshot)

    def _observe_alerts(self, snap: Snapshot) -> None:
        """Hand ``snap`` to the rules; say what fired or resolved."""
        assert self.alerting is not None
        try:
            alerts = self.alerting.observe(snap)
        except Exception as exc:  # a rule's evaluation must not take the dashboard down
            self.notify_once("alerts-failed", f"evaluating the alert rules failed: {exc!r} "
                             "(a bug in gputop)", severity="error", timeout=30)
            return
        if alerts:
            self._alerts_changed(alerts)

    def _alerts_changed(self, alerts: Sequence[Alert]) -> None:
        from gputop.tui.text.alerts import transition_notices

        for notice in transition_notices(alerts):
            self.notify(notice.message, title=notice.title, severity=notice.severity,
                        timeout=notice.timeout)
        self._show_alert_count()
        screen = self.get_screen("alerts") if self.is_screen_installed("alerts") else None
        if screen is not None and screen in self.screen_stack:
            cast("AlertsScreen", screen).show_alerts(self.snapshot.time if self.snapshot else None)

    def _show_alert_count(self) -> None:
        if self.alerting is not None:
            self.header.set(alerts=self.alerting.unacknowledged())

    def _alert_journal_failed(self, text: str) -> None:
        self.notify(f"{text}: alerts still go out, but a restart may send them again",
                    title="alerts", severity="error", timeout=30)

    def on_alerts_screen_acknowledged(self, message: Message) -> None:
        self._show_alert_count()

    def on_terminal_bytes(self, message: TerminalBytes) -> None:
        """Write what a terminal channel (the bell, OSC 9, OSC 777) wrote, through the driver,
        on this thread: between two frames, never inside another escape sequence."""
        driver = self._driver
        if driver is not None and not self.leaving:
            driver.write(message.text)
            driver.flush()

    def _delivery_event_from_thread(self, event: DeliveryEvent) -> None:
        from gputop.tui.alerting import DeliveryTrouble

        self.post_message(DeliveryTrouble(event))

    def on_delivery_trouble(self, message: DeliveryTrouble) -> None:
        """Say an alert channel's trouble once per channel and cause, not once per retry or
        per alert; a delivery makes the channel's troubles news again."""
        from gputop.tui.text.alerts import trouble_key

        event = message.event
        if event.kind == "delivered":
            self._delivery_trouble = {t for t in self._delivery_trouble if t[0] != event.channel}
            return
        key = trouble_key(event)
        if key is None or key in self._delivery_trouble or self.leaving:
            return
        self._delivery_trouble.add(key)
        self.notify(event.message, title="alert delivery", severity="warning", timeout=15)

    def action_alerts(self) -> None:
        from gputop.tui.screens.alerts import AlertsScreen

        if self.alerting is None:  # not yet built, or off (a replay): check_action hides it
            return
        alerting = self.alerting
        now = self.snapshot.time if self.snapshot is not None else time.time()
        self.show_kept("alerts", AlertsScreen, lambda: AlertsScreen(alerting, now),
                       lambda screen: screen.show_alerts(now))  # shown again with what changed

    def _close_alerting(self) -> None:
        """Give the channels `ALERTS_CLOSE_S` to deliver what they hold, on a thread of its
        own, while Textual gives the terminal back; `wait_for_alerts` joins it after."""
        alerting = self.alerting
        if alerting is None or self._alerts_closing is not None:
            return

        def close() -> None:
            self.alerts_delivered = alerting.close(ALERTS_CLOSE_S)

        self._alerts_closing = threading.Thread(target=close, name="gputop-alerts-close",
                                                daemon=True)
        self._alerts_closing.start()

    def run_until_stopped(self, lifeline: Lifeline | None) -> int:
        """Run as TerminalApp does; then, the terminal given back, wait for the channels'
        last deliveries (bounded: `wait_for_alerts`)."""
        try:
            return super().run_until_stopped(lifeline)
        finally:
            self.wait_for_alerts()

    def wait_for_alerts(self) -> None:
        """Wait, once the app has ended, for the channels' close: at most its deadline and the
        dispatcher's grace for a channel it stops (`alerts_delivered` says how it went)."""
        if self._alerts_closing is not None:
            self._alerts_closing.join(ALERTS_CLOSE_S + ALERTS_STOP_GRACE_S)

    def action_advisor(self) -> None:
        from gputop.tui.screens.advisor import AdvisorScreen

        self.show_kept("advisor", AdvisorScreen,
                        lambda: AdvisorScreen(backend=self.backend, sampler=self.sampler,
                                              readonly=self.readonly),
                        AdvisorScreen.opened)  # shown again as a new one shows

    def action_record(self) -> None:
        if self.recorder is not None:
            self._stop_recording()
            return
        from gputop.query.recorder import DEFAULT_FIELDS, Recording

        info = self.backend.info()
        host = self.snapshot.host if self.snapshot else info.host
        name = f"gputop-{host}-{time.strftime('%Y%m%d-%H%M%S')}.csv"
        # the full path: `r` over tmux or SSH records where the server runs, not where one looks
        path = os.path.abspath(os.path.join(self.record_dir, name))
        try:
            # the CSV log, and beside it the snapshot stream (with processes) `gputop report` reads
            self.recorder = Recording(path, info.backend, host,
                                      self.record_fields or DEFAULT_FIELDS)
        except Exception as exc:
            self.notify(f"cannot record to {path}: {exc}", severity="error")
            return
        self.record_path, self.record_samples = path, 0
        self.sampler.want("recording", self.recorder.wants)
        self.header.set(recording=self._recording_text())
        self.notify(f"recording to {self._recording_files()}", timeout=3)

    def _stop_recording(self, quiet: bool = False) -> None:
        if self.recorder is None:
            return
        try:
            self.recorder.close()
        except Exception as exc:
            if not quiet:
                self.notify(f"closing {self.record_path}: {exc}", severity="error")
        if not quiet:
            self.notify(f"recorded {self.record_samples} samples to {self._recording_files()}",
                        timeout=4)
        self.recorder = None
        self.sampler.unwant("recording")
        if self.is_running:
            self.header.set(recording=None)

    def _recording_text(self) -> str | None:
        if self.recorder is None or self.record_path is None:
            return None
        # the files' name (the notices give the whole path): the header has one line
        return f"{self.recorder.shown_name} {self.record_samples}"

    def _recording_files(self) -> str:
        """Name the two files of the recording: the CSV's whole path, and its stream's name."""
        assert self.recorder is not None
        csv, stream = self.recorder.paths
        return f"{csv} and {os.path.basename(stream)}"

    # ------------------------------------------------------------------ replay
    def _replay_text(self) -> str | None:
        p = self.player
        if p is None:
            return None
        digits = _position_digits(p.times, p.duration)
        text = (f"{'▶' if p.playing else '⏸'} {_mmss(p.position, digits)} / "
                f"{_mmss(p.duration, digits)}")
        if p.speed:
            text += f" x{p.speed:g}"
        return text

    def _move(self, move: Callable[[ReplayControls], None]) -> None:
        """Move the replay's player (a refusal, such as a bad speed, is a notice), then show
        where it is in the header."""
        p = self.player
        if p is None:
            return
        try:
            move(p)
        except ValueError as exc:
            self.notify(str(exc), severity="error")
        self.header.set(replay=self._replay_text())

    def action_replay_toggle(self) -> None:
        self._move(lambda p: p.toggle())

    def action_replay_step(self, n: int) -> None:
        self._move(lambda p: p.step(n))

    def action_replay_speed(self, factor: float) -> None:
        from gputop.core.bounds import REPLAY_SPEED

        self._move(lambda p: p.set_speed(
            max(REPLAY_SPEED.low, min(REPLAY_SPEED.high, p.speed * factor))))

    def action_replay_seek(self, delta: float) -> None:
        self._move(lambda p: p.skip(delta))

    def action_replay_seek_prompt(self) -> None:
        from gputop.tui.screens.modals import Prompt

        def go(value: str | None) -> None:
            from gputop.core.bounds import REPLAY_SEEK

            if value is None or not value.strip():
                return
            seconds = position_seconds(value)
            problem = (f"not a position: {value!r} (seconds, m:ss or h:mm:ss)" if seconds is None
                       else REPLAY_SEEK.problem(repr(seconds)))
            if seconds is None or problem is not None:
                self.notify(f"go to: {problem}", severity="error")
                return
            at = seconds
            self._move(lambda p: p.seek(at))

        self.push_screen(Prompt("Go to (seconds or m:ss):"), go)

    # ------------------------------------------------------------------ palette
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if not self.readonly:  # it writes a file
            yield SystemCommand("Screenshot", "save an SVG of the screen",
                                self.save_screenshot_here)

    def save_screenshot_here(self) -> str | None:
        """An SVG of the screen in ~/Downloads where it exists (Textual's choice), else in the
        folder recordings go to; the notice says where."""
        downloads = os.path.expanduser("~/Downloads")
        folder = downloads if os.path.isdir(downloads) else self.record_dir
        name = f"gputop-{time.strftime('%Y%m%d-%H%M%S')}.svg"
        try:
            path = self.save_screenshot(name, folder)
        except OSError as exc:
            self.notify(f"cannot save a screenshot in {folder}: {exc}", severity="error")
            return None
        self.notify(f"screenshot saved to {os.path.abspath(path)}", timeout=4)
        return path


def position_seconds(text: str) -> float | None:
    """A replay position as typed: seconds (`70`, `70.5`) or as the header shows it (`1:10`,
    `1:02:03`); None if it is neither."""
    parts = text.strip().split(":")
    if not 1 <= len(parts) <= 3 or not all(parts):
        return None
    try:
        values = [float(p) for p in parts]
    except ValueError:
        return None
    if any(not math.isfinite(v) or v < 0 for v in values) or any(v >= 60 for v in values[1:]):
        return None
    seconds = 0.0
    for v in values:
        seconds = seconds * 60 + v
    return seconds


def _position_digits(times, duration: float | None) -> int:
    """Decimals a replay position needs so that stepping one sample always shows: none for a
    log of a sample a second or slower, tenths for up to 10 Hz, hundredths above."""
    if len(times) < 2 or not duration:
        return 0
    period = duration / (len(times) - 1)
    return 0 if period >= 1 else 1 if period >= 0.1 else 2


def _mmss(seconds: float | None, digits: int = 0) -> str:
    if seconds is None:
        return "--:--"
    scale = 10 ** digits
    # a hair up: a sample logged at 0.0999999 s is at the tenth 0.1, as its log line says
    units = int(seconds * scale + 1e-3)
    m, rest = divmod(units, 60 * scale)
    whole, part = divmod(rest, scale)
    return f"{m}:{whole:02d}" + (f".{part:0{digits}d}" if digits else "")


def run_app(config: DashboardConfig, backend: Backend, devices, first: Snapshot | None,
            lifeline: Lifeline | None = None,
            alerts: Callable[[], AlertConfig] | None = None) -> int:
    """The dashboard on an open backend (gputop.commands.dashboard opened it and drew the first frame);
    ``lifeline`` delivers the stop requests that reach the process while it runs; ``alerts``
    reads the alert rules and channels, after the first frame (None: no alerts)."""
    themes, warnings = all_themes()
    names = [t.name for t in themes]
    settings = config.settings
    check_theme(config, names)
    app = GputopApp(backend, interval=config.source.interval, devices=devices, theme=config.theme,
                    readonly=config.readonly, themes=themes, theme_warnings=warnings,
                    record_fields=config.record_fields, record_dir=config.record_dir, first=first,
                    columns=settings.columns, sort=settings.sort,
                    sort_descending=settings.sort_descending, history_s=config.history_s,
                    alerts=alerts)
    return app.run_until_stopped(lifeline)


__all__ = ["GputopApp", "run_app"]
