"""The power-limit advisor screen (key `a` in the dashboard).

Shows the passive view from the dashboard's sampler at all times; `s` runs a measured sweep in a
worker thread (progress bar, rows as they come, the curve drawn by plotext), `c` cancels it and
`r` restores what a killed run left behind. The sweep changes limits only inside a LimitGuard:
cancelling, closing the screen, quitting the app, SIGTERM and SIGHUP all restore the originals
before the screen goes away. On a replayed recording nothing can be changed: `s` and `r` are not
offered, and pressing them says why.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from gputop.advisor import journal, passive, recommend, render
from gputop.advisor.recommend import SweepConfig
from gputop.advisor.safety import cannot_set, missing_privilege, recording
from gputop.backends.base import Backend, NoPermission, Unsupported
from gputop.core import budget
from gputop.core.errors import GputopError
from gputop.core.formatting import num
from gputop.core.lifeline import critical
from gputop.sampler import Sampler
from gputop.tui.screens import HidesDashboardKeys
from gputop.tui.widgets.footer import KeyFooter

if TYPE_CHECKING:  # the sweep's modules and widgets load at the first sweep (see _sweep_widgets)
    from textual.widgets import DataTable, ProgressBar

    from gputop.advisor.recommend import Plan
    from gputop.advisor.sweep import Progress, SweepResult

RESTORE_WAIT_S = 30.0
COLUMNS = ("limit", "draw", "saved", "slowdown", "energy/work", "perf/W", "cost", "true")


class SweepProgress(Message):
    def __init__(self, progress: Progress) -> None:
        super().__init__()
        self.progress = progress


class SweepDone(Message):
    def __init__(self, result: SweepResult | None, error: str | None, denied: str | None,
                 restored: list[Any] | None, refusal: BaseException | None = None) -> None:
        super().__init__()
        self.result = result
        self.error = error
        self.denied = denied
        self.restored = restored
        self.refusal = refusal  # the driver's refusal behind ``denied``


class AdvisorScreen(HidesDashboardKeys, Screen):
    """``AdvisorScreen(backend, sampler=None, devices=None, *, config=None, readonly=False)``.

    - ``backend``: the dashboard's open backend (the screen never closes it).
    - ``sampler``: the dashboard's running Sampler; its history feeds the passive view. Without
      one the screen starts its own on ``backend`` and stops it when it closes.
    - ``devices``: GPU indices to sweep together (default: all).
    - ``config``: SweepConfig (settle/measure windows, step, --max-slowdown, eta).
    - ``readonly``: no sweeps and no restores (the dashboard's ``--readonly``).
    """

    BINDINGS = [
        Binding("s", "sweep", "sweep"),
        Binding("c", "cancel", "cancel sweep"),
        Binding("r", "restore", "restore journal"),
        # on a recording, in their place (hidden): say why, rather than let the keys fall
        # through to the dashboard's own s and r (the saturation panel, a CSV recording)
        Binding("s,r", "recorded", show=False),
        Binding("escape,a,q", "close", "back"),
    ]

    DEFAULT_CSS = """
    AdvisorScreen { layout: vertical; }
    AdvisorScreen #adv-title { background: $boost; padding: 0 1; text-style: bold; }
    AdvisorScreen #adv-status { padding: 0 1; height: auto; }
    AdvisorScreen #adv-progress { padding: 0 1; height: 1; }
    AdvisorScreen #adv-body { height: 1fr; }
    AdvisorScreen #adv-passive, AdvisorScreen #adv-plot, AdvisorScreen #adv-rec {
        padding: 0 1; height: auto;
    }
    AdvisorScreen #adv-passive { text-wrap: nowrap; text-overflow: ellipsis; }
    AdvisorScreen DataTable { height: auto; max-height: 18; }
    """

    def __init__(self, backend: Backend | None = None, sampler: Sampler | None = None,
                 devices: Sequence[int] | None = None, *, config: SweepConfig | None = None,
                 readonly: bool = False, journal_dir: Path | None = None) -> None:
        super().__init__()
        if backend is None and sampler is not None:
            backend = sampler.backend
        self.backend = backend
        self.sampler = sampler
        self._own_sampler = False
        self.devices = list(devices) if devices is not None else None
        self.config = config or SweepConfig()
        self.readonly = readonly
        # why nothing can be changed here: a replayed recording; None on live GPUs
        self.recorded = recording(backend) if backend is not None else None
        self.journal_dir = journal_dir
        self.cancel_event = threading.Event()
        self.finished = threading.Event()
        self.finished.set()
        self.running = False
        self.plan: Plan | None = None  # the sweep's, once one was asked for
        self.result: SweepResult | None = None
        self.error: str | None = None
        self.restored: list[Any] | None = None
        # (start, end) of the sweeps run here: their own lowered limits are not the job's
        self._sweeps: list[list[float | None]] = []

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Static("Power-limit advisor", id="adv-title")
        yield Static("", id="adv-status")
        with VerticalScroll(id="adv-body"):
            yield Static("", id="adv-passive")
            yield Static("", id="adv-plot")
            yield Static("", id="adv-rec")
        yield KeyFooter()

    def on_mount(self) -> None:
        if self.backend is not None:
            if self.devices is None:
                self.devices = [d.index for d in self.backend.info().devices]
            if self.sampler is None:
                self.sampler = Sampler(self.backend, self.config.interval_s, self.devices)
                self.sampler.start()
                self._own_sampler = True
            names = sorted({d.name or "?" for d in self.backend.info().devices})
            sim = " — SIMULATED" if self.backend.name == "sim" else ""
            self.query_one("#adv-title", Static).update(
                f"Power-limit advisor: GPU {','.join(map(str, self.devices))} "
                f"({', '.join(names)}){sim}")
        self._passive_timer = self.set_interval(2.0, self.refresh_passive, pause=True)
        self.opened()

    def opened(self) -> None:
        """Show the screen as a new one shows it: the passive view and what the journal says, no
        sweep's rows. The dashboard builds the screen once and calls this at each later open
        (#26: building its widgets and their CSS cost most of opening it)."""
        for widget in self.query("#adv-progress, #adv-table"):  # none before the first sweep
            widget.display = False
        self.query_one("#adv-plot", Static).update("")
        self.query_one("#adv-rec", Static).update("")
        self.plan = self.result = self.error = self.restored = None
        if self.backend is None or self.sampler is None:
            self._status("no backend: the advisor needs the dashboard's open backend")
            return
        # power, limits and the energy counter on every tick while the advisor is open
        self.sampler.want("advisor", budget.EVERYTHING)
        self._passive_timer.resume()
        if self.recorded is not None:
            self._status(f"{self.recorded}: no sweep, no restore. The passive view below reads"
                         " the recorded power.")
            self.refresh_passive()
            return
        try:
            left = journal.leftovers(self.backend, self.journal_dir)
        except GputopError as exc:
            left = []
            self._status(str(exc))
        if left:
            self._status(journal.leftover_warning(left).replace("`gputop advise --restore`",
                                                                "r (or `gputop advise --restore`)"),
                         error=True)
        else:
            self._status("passive view: nothing is changed. s: measure the curve (changes power"
                         " limits, restores them after)" if not self.readonly else
                         "passive view (read-only session: no sweeps)")
        self.refresh_passive()

    def _hide(self) -> None:
        """Leave the screen: the sampler back to what the dashboard reads, the passive view's
        refresh stopped while nobody sees it (the dashboard keeps the screen for the next open)."""
        self._passive_timer.pause()
        if self.sampler is not None:
            self.sampler.unwant("advisor")
        self.app.pop_screen()

    def on_unmount(self) -> None:
        self._stop_and_restore()
        if self.sampler is not None:
            self.sampler.unwant("advisor")
            if self._own_sampler:
                self.sampler.stop()

    def _limit_commands(self, limits: Mapping[int, float]) -> list[str]:
        """Return the backend's commands that set ``limits`` by hand (none without a backend)."""
        return self.backend.limit_commands(limits) if self.backend is not None else []

    # ------------------------------------------------------------------ passive
    def refresh_passive(self) -> None:
        if self.sampler is None:
            return
        # all the sampler holds (an hour): a limit is named from 5 minutes of watching
        gpus = passive.summarize_history(self.sampler.history, self.devices,
                                         keep=lambda t: not self._during_sweep(t))
        if not gpus or all(g.samples < 2 for g in gpus):
            self.query_one("#adv-passive", Static).update("collecting power readings…")
            return
        note = (self.recorded or ("the sweep's own limits left out" if self._sweeps
                                  else "passive: nothing was changed"))
        self.query_one("#adv-passive", Static).update(
            Text("\n".join(render.passive_lines(gpus, note, commands=self.recorded is None,
                                                limit_commands=self._limit_commands))))

    def _during_sweep(self, t: float) -> bool:
        return any(cast(float, start) <= t and (end is None or t <= end)  # a start is a time
                   for start, end in self._sweeps)

    def _status(self, text: str, error: bool = False) -> None:
        self.query_one("#adv-status", Static).update(Text(text, style="bold red" if error else ""))

    def _sweep_widgets(self) -> tuple[ProgressBar, DataTable[str]]:
        """Return the sweep's progress bar and table of rows, mounted by the first sweep (hidden
        and empty until one runs: #26, building them was a third of the screen's first open)."""
        from textual.widgets import DataTable, ProgressBar

        try:
            return (self.query_one("#adv-progress", ProgressBar),
                    self.query_one("#adv-table", DataTable))
        except NoMatches:
            pass
        bar = ProgressBar(total=100, show_eta=False, id="adv-progress")
        table: DataTable[str] = DataTable(id="adv-table", zebra_stripes=True, cursor_type="none")
        table.add_columns(*COLUMNS)
        self.mount(bar, after="#adv-status")
        self.query_one("#adv-body").mount(table, after="#adv-passive")
        return bar, table

    # ------------------------------------------------------------------ actions
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Offer the sweep and the restore only on live GPUs, the refusal only on a recording."""
        if action in ("sweep", "cancel", "restore"):
            return self.recorded is None
        if action == "recorded":
            return self.recorded is not None
        return True

    def action_recorded(self) -> None:
        self._status(f"{self.recorded}: no sweep, no restore", True)

    def action_sweep(self) -> None:
        if self.running or self.backend is None:
            return
        if self.readonly:
            self._status("read-only session: sweeps change power limits and are disabled", True)
            return
        cannot = cannot_set(self.backend)
        if cannot is not None:  # the GPU or backend refuses whoever asks: no command would help
            self._status(f"cannot sweep: {cannot}. The passive view below changes nothing.", True)
            return
        why = missing_privilege(self.backend)
        if why is not None:
            self._denied(why)
            return
        try:
            if journal.leftovers(self.backend, self.journal_dir):
                self._status("an earlier run left limits changed: press r to restore them first",
                             True)
                return
            snap = self.backend.sample(self.devices)
            plan = recommend.make_plan(list(snap.devices), self.config)
        except GputopError as exc:
            self._status(str(exc), True)
            return
        if not plan.candidates:
            self._status("already at the lowest allowed limit: nothing to sweep")
            return
        self.plan = plan
        self.result = None
        self.error = None
        self.cancel_event.clear()
        self.finished.clear()
        self.running = True
        bar, table = self._sweep_widgets()
        bar.display = True
        bar.update(total=100, progress=0)
        table.clear()
        table.display = True
        self.query_one("#adv-plot", Static).update("")
        self.query_one("#adv-rec", Static).update("")
        self._status(f"sweeping {', '.join(f'{w:g}' for w in plan.candidates)} W"
                     " (c: cancel and restore)")
        self._sweeps.append([snap.time, None])
        self.run_worker(self._sweep_thread, thread=True, exclusive=True, group="advisor")

    def action_cancel(self) -> None:
        if self.running:
            self.cancel_event.set()
            self._status("cancelling: restoring the original limits…")

    def action_restore(self) -> None:
        if self.running or self.backend is None:
            return
        if self.readonly:
            self._status("read-only session: restoring is disabled here;"
                         " run `gputop advise --restore`", True)
            return
        try:
            found = journal.leftovers(self.backend, self.journal_dir)
            done = []
            for j in found:
                done += journal.restore_from(self.backend, j)
        except GputopError as exc:
            self._status(str(exc), True)
            return
        if not found:
            self._status("nothing to restore")
        else:
            self._status("restored: " + ", ".join(f"GPU {i} {w:g} W" for i, _, w in done)
                         if done else "limits were already at their originals; journal removed")

    def action_close(self) -> None:
        if self.running:
            self.action_cancel()
            # Textual's WorkType infers Never from a coroutine function that returns None
            self.run_worker(self._close_when_done, group="advisor-close")  # type: ignore[arg-type]
            return
        self._hide()

    async def _close_when_done(self) -> None:
        import asyncio

        await asyncio.get_running_loop().run_in_executor(None, self.finished.wait, RESTORE_WAIT_S)
        self._hide()

    # ------------------------------------------------------------------ the sweep thread
    def _sweep_thread(self) -> None:
        from gputop.advisor.sweep import Cancelled, Sweep

        plan = self.plan
        assert self.backend is not None and plan is not None  # set before the thread starts
        guard = journal.LimitGuard(self.backend, plan.devices, self.journal_dir)
        sweep = Sweep(self.backend, plan, guard, cancel=self.cancel_event,
                      progress=self._progress_from_thread)
        result = None
        error = None
        denied = None
        refusal: BaseException | None = None
        restored: list[tuple[int, float | None, float]] | None
        # The limits go back even if the app is being ended by force (its terminal gone): the
        # deadline cancels the sweep and waits for this restore.
        with critical(wrap_up=self.cancel_event.set):
            try:
                guard.begin(plan.originals)
                result = sweep.run()
            except Cancelled:
                error = "cancelled"
            except (NoPermission, Unsupported) as exc:
                denied = str(exc)
                refusal = exc
            except Exception as exc:  # shown on the screen; the finally still restores
                error = str(exc) or type(exc).__name__
            finally:
                try:
                    restored = guard.finish()
                except Exception as exc:
                    restored = None
                    error = f"{error + '; ' if error else ''}{exc}"
                self.finished.set()
        # post_message is thread-safe and does not wait for the UI: a screen that is closing
        # (and waiting for this thread to restore the limits) can never deadlock with it.
        self.post_message(SweepDone(result, error, denied, restored, refusal))

    def _progress_from_thread(self, p: Progress) -> None:
        self.post_message(SweepProgress(p))

    def on_sweep_progress(self, message: SweepProgress) -> None:
        p = message.progress
        if not self.is_mounted or not self.running:
            return
        self._sweep_widgets()[0].update(progress=round(100 * p.fraction, 1))
        self._status(f"{p.message} (c: cancel and restore)")
        self._show_rows(p.rows)

    def _show_rows(self, rows: Sequence[Any]) -> None:
        table = self._sweep_widgets()[1]
        if table.row_count == len(rows):
            return
        table.clear()
        base_cost = rows[0].cost if rows else None
        for r in rows:
            table.add_row(
                f"{r.limit_w:g} W",
                num(r.power_w, ".0f", " W"),
                num(r.saved_w, ".0f", " W"),
                f"{r.slowdown_pct:.1f}%" + (f" ±{r.spread_pct:.1f}" if r.spread_pct is not None else ""),
                num(r.energy_change_pct, "+.0f", "%"),
                "N/A" if r.perf_per_w is None else f"{100 * (r.perf_per_w - 1):+.0f}%",
                "N/A" if r.cost is None or not base_cost else f"{r.cost / base_cost:.3f}",
                num(r.true_slowdown_pct, ".1f", "%", none=""),
            )
        if len(rows) > 1:
            width = max(40, min(100, self.size.width - 4))
            self.query_one("#adv-plot", Static).update(Text.from_ansi(render.plot(
                rows, width=width, height=14, max_slowdown_pct=self.config.max_slowdown_pct,
                color=True)))

    def on_sweep_done(self, message: SweepDone) -> None:
        result, error, denied, restored = (message.result, message.error, message.denied,
                                           message.restored)
        self.running = False
        if self._sweeps and self._sweeps[-1][1] is None and self.sampler is not None:
            # the limits are back: samples from the next one on are the job's own again
            latest = self.sampler.history.latest
            self._sweeps[-1][1] = latest.time if latest is not None else float("inf")
        self.result = result
        self.error = error
        self.restored = restored
        if not self.is_mounted:
            return
        bar = self._sweep_widgets()[0]
        bar.display = result is not None
        back = ("limits restored to the originals" if restored is not None
                else "RESTORE FAILED: run `gputop advise --restore`")
        if denied is not None:
            self._denied(denied, message.refusal)
        elif error is not None:
            self._status(f"sweep stopped: {error}; {back}", error is not None and error != "cancelled")
        elif result is not None:
            self._show_rows(result.rows)
            bar.update(progress=100)
            self.query_one("#adv-rec", Static).update(
                Text("\n".join(render.recommendation_lines(result, self._limit_commands))))
            self._status(f"sweep finished ({result.stopped}); {back}")

    def _denied(self, why: str, refusal: BaseException | None = None) -> None:
        from gputop.advisor.safety import what_is_needed

        needs = what_is_needed(refusal)
        if needs is None:  # the GPU itself refuses: no command would help
            self._status(f"cannot sweep: {why}. The passive view below changes nothing.", True)
            return
        plan = self.plan
        cmds = ""
        first = (self._limit_commands(plan.limits_for(plan.candidates[0]))
                 if plan is not None and plan.candidates else [])
        if first:
            cmds = " Or set them yourself: " + "; ".join(first)
        self._status(f"cannot sweep: {why}. Needed: {needs}.{cmds} The passive view below needs"
                     " no privilege.", True)

    def _stop_and_restore(self) -> None:
        if self.running or not self.finished.is_set():
            self.cancel_event.set()
            self.finished.wait(RESTORE_WAIT_S)
