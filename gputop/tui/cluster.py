"""The cluster screen (`gputop cluster`): every node in one table, a users view, and any node
opened in the local dashboard's own widgets.

The transport runs on its own I/O thread (gputop/cluster/transport.py); this screen polls its
version counter a few times a second and touches only the rows (and cells) that changed, keyed by
host. Everything a remote sends is shown as plain text: cells are `rich.text.Text` objects, never
markup strings.

With alert rules (`gputop.cluster.alerts`), each refresh hands the nodes' new snapshots to the
one engine: a fired alert is a notice naming its node, and a node's row counts the alerts
firing on it after its name.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, cast

from rich.text import Text
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Input, Static

from gputop.cluster import states
from gputop.cluster.aggregate import (
    NodeRow,
    UserRow,
    filter_rows,
    node_row,
    sort_rows,
    totals,
    users_view,
)
from gputop.cluster.alerts import ClusterAlerts
from gputop.cluster.job_view import JobReport, job_on, report_from
from gputop.cluster.node import NodeStatus
from gputop.cluster.source import ClusterSource
from gputop.config.cluster import ClusterViewConfig
from gputop.core.formatting import num, short_mib
from gputop.core.lifeline import Lifeline, Stopped, Terminal, quit_code
from gputop.core.visible import visible
from gputop.history import History
from gputop.tui import actions
from gputop.tui.shell import ShellApp
from gputop.tui.widgets.footer import KeyFooter
from gputop.tui.widgets.keyed_table import Column, KeyedTable, Row
from gputop.tui.widgets.nodes import NODE_COLUMNS
from gputop.tui.widgets.processes import COLUMNS as PROCESS_COLUMNS

if TYPE_CHECKING:
    from gputop.tui.widgets.header import Header

COLUMN_OF_FIELD = {"host": "host", "state": "state", "gpus": "gpus", "util": "util",
                   "memory": "memory", "power": "power", "hints": "hints", "age": "age"}
USER_COLUMNS = (
    Column("user", "USER", 16), Column("gpus", "GPUS", 5, right=True),
    Column("memory", "GPU MEMORY", 10, right=True), Column("procs", "PROCS", 5, right=True),
    Column("where", "WHERE (node[GPUs])", 0),
)
JOB_COLUMNS = (
    Column("node", "NODE", 16), Column("gpu", "GPU", 3, right=True),
    Column("util", "UTIL", 5, right=True), Column("clock", "SM CLOCK", 11, right=True),
    Column("power", "POWER", 6, right=True), Column("temp", "TEMP", 5, right=True),
    Column("memory", "MEMORY", 13, right=True), Column("straggler", "STRAGGLER", 0),
)
DESCENDING_FIRST = {"gpus", "util", "memory", "power", "hints", "age"}
# The nodes table's actions, out of place over an opened node.
NODES_ONLY_ACTIONS = actions.names(actions.CLUSTER_VIEW, on_table=True)

# State -> the table's style class for it (colours come from the theme's variables).
STATE_CLASS = {
    states.OK: "ok", states.STALE: "stale", states.CONNECTING: "muted",
    states.UNREACHABLE: "bad", states.AUTH_FAILED: "bad", states.HOST_KEY_REJECTED: "bad",
    states.FAILED: "bad", states.NO_GPUTOP: "warn", states.INCOMPATIBLE: "warn",
    states.PROTOCOL_ERROR: "warn", states.DOWN: "bad",
}
STATE_VARIABLE = {"ok": "gauge-low", "stale": "stale", "muted": "muted", "bad": "error",
                  "warn": "warning"}


def fmt_age(age: float | None, interval: float) -> str:
    """Coarse on purpose: a fresh node reads "live", so 64 age cells do not repaint each tick."""
    if age is None:
        return "-"
    if age <= 2 * interval + 0.5:
        return "live"
    if age < 120:
        return f"{age:.0f}s"
    if age < 7200:
        return f"{age / 60:.0f}m"
    return f"{age / 3600:.0f}h"


ALERT_MARK = "⚠"  # after a node's name: the alerts firing on it
_NOTICE: dict[str, SeverityLevel] = {"critical": "error", "warning": "warning",
                                     "info": "information"}
NOTICE_S = 10.0


def table_row(row: NodeRow, interval: float, firing: int = 0) -> Row:
    if row.gpus is None:  # no data from this node yet: nothing to say N/A about
        figures = ("-", "-", "-", "-", "-")
    else:
        figures = (num(row.gpus, "d"), num(row.util_pct, ".0f", "%"),
                   f"{short_mib(row.mem_used_mib)}/{short_mib(row.mem_total_mib)}",
                   f"{num(row.power_w)}/{num(row.power_limit_w)}W", num(row.hints, "d"))
    host = f"{row.host} {ALERT_MARK}{firing}" if firing else row.host
    cells = (host, row.state, row.mode, *figures, fmt_age(row.age_s, interval), row.reason)
    styles = ("bad" if firing else None, STATE_CLASS.get(row.state, "bad"), None, None, None,
              None, None,
              "warn" if row.hints else None, "stale" if row.state == states.STALE else None,
              None if row.state == states.OK else "muted")
    return Row(row.host, cells, styles)


def user_row(u: UserRow) -> Row:
    return Row(u.user, (u.user, str(u.gpus), short_mib(u.memory_mib), str(u.processes), u.where))


def summary_text(rows: list[NodeRow]) -> str:
    t = totals(rows)
    by_state: dict[str, int] = {}
    for r in rows:
        by_state[r.state] = by_state.get(r.state, 0) + 1
    trouble = ", ".join(f"{n} {s}" for s, n in sorted(by_state.items(),
                                                      key=lambda kv: states.SEVERITY.get(kv[0], 99))
                        if s != states.OK)
    return (f"{t['nodes']} nodes, {t['ok']} ok" + (f" ({trouble})" if trouble else "") +
            f" | {num(t['gpus'])} GPUs | util {num(t['util_pct'], '.0f', '%')} | memory "
            f"{short_mib(t['mem_used_mib'])}/{short_mib(t['mem_total_mib'])} | power "
            f"{num(t['power_w'])} W")


def job_rows(r: JobReport) -> list[Row]:
    """The job screen's rows: each GPU of the job node by node, a straggler's (or its whole
    node's) marked with the finding."""
    rows = []
    for g in r.gpus:
        d, flag = g.device, r.flag(g)
        cells = (g.node, str(d.index), num(d.utilization_gpu_pct, ".0f", "%"),
                 f"{num(d.clock_sm_mhz)}/{num(d.clock_sm_max_mhz)}", num(d.power_draw_w, ".0f", "W"),
                 num(d.temperature_c, ".0f", "C"),
                 f"{short_mib(d.memory_used_mib)}/{short_mib(d.memory_total_mib)}",
                 "" if flag is None else ("whole node" if flag.index is None else "this GPU"))
        styles = ("warn" if flag is not None else None,) + (None,) * 6 + ("bad",)
        rows.append(Row(f"{g.node}\0{d.index}", cells, styles))
    return rows


def job_text(r: JobReport) -> Text:
    """The job screen's head: the job, its size, and each straggler's reason (or none)."""
    line = Text()
    line.append(f" job {visible(r.job)}", "bold")
    line.append(f"  {len(r.gpus)} GPUs on {len(r.nodes)} nodes")
    for s in r.stragglers:
        line.append(f"\n straggler: {visible(s.reason)}")
    if not r.stragglers:
        line.append("  no straggler" if len(r.gpus) >= 2 else "  nothing to compare")
    return line


class JobScreen(Screen):
    """One job's GPUs on all its nodes side by side, its straggler flagged with the reason."""

    BINDINGS = [Binding("escape,backspace,q", "back", "back")]
    DEFAULT_CSS = """
    JobScreen #job-status { height: auto; background: $panel; color: $foreground; }
    JobScreen KeyedTable { height: 1fr; }
    """

    def __init__(self, job: str) -> None:
        super().__init__()
        self.job = job

    def compose(self) -> ComposeResult:
        yield Static(id="job-status")
        yield KeyedTable(JOB_COLUMNS, id="job-gpus", empty_text="no GPU of this job has data yet")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.refresh_from(cast(ClusterApp, self.app).job_report(self.job))

    def refresh_from(self, r: JobReport) -> None:
        try:
            self.query_one("#job-status", Static).update(job_text(r))
            self.query_one("#job-gpus", KeyedTable).set_rows(job_rows(r))
        except NoMatches:
            return  # its widgets are gone: the app is quitting with the job open

    def action_back(self) -> None:
        self.app.pop_screen()


class NodeScreen(Screen):
    """One node in the dashboard's widgets, fed from that node's snapshot stream."""

    BINDINGS = [
        Binding("escape,backspace,q", "back", "nodes"),
        # The dashboard's process sort keys; here they win over the nodes table's letters.
        *(Binding(cast(str, c.sort_key), f"sort_processes('{c.key}')", f"sort by {c.title}",
                  show=False)
          for c in PROCESS_COLUMNS),
        Binding("less_than_sign", "select_gpu(-1)", "previous GPU", show=False),
        Binding("greater_than_sign", "select_gpu(1)", "next GPU", show=False),
        Binding("h", "toggle_plot", "history plot", show=False),
        Binding("o", "only_gpu", "only this GPU", show=False),
        Binding("j", "open_job", "the selected GPU's job", show=False),
    ]
    DEFAULT_CSS = """
    NodeScreen #node-status { height: 1; background: $panel; color: $foreground; }
    """

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host
        self.seq = -1
        self.history = History()  # this node's, from when its view opened

    def compose(self) -> ComposeResult:
        from gputop.tui.widgets.dashboard import DashboardView
        from gputop.tui.widgets.header import Header

        yield Header(id="node-header")
        yield Static(id="node-status")
        yield DashboardView(id="node-dashboard")
        yield KeyFooter()

    def on_mount(self) -> None:
        app = cast(ClusterApp, self.app)
        self.history.set_interval(app.interval)
        self.dashboard.attach(self.history)
        self.dashboard.set_interval(app.interval)
        self.refresh_from(app.cluster.status(self.host), time.monotonic())

    @property
    def dashboard(self):
        return self.query_one("#node-dashboard")

    def refresh_from(self, status: NodeStatus, now: float) -> None:
        try:
            bar = self.query_one("#node-status", Static)
            header = cast("Header", self.query_one("#node-header"))
            dashboard = self.dashboard
        except NoMatches:
            return  # its widgets are gone: the app is quitting with the node open
        app = cast(ClusterApp, self.app)
        age = status.age(now)
        line = Text()
        line.append(f" {visible(status.host)} ", "bold")
        line.append(status.state, app.state_style(status.state))
        line.append(f"  via {status.mode}")
        if age is not None:
            line.append(f"  data {fmt_age(age, app.interval)}")
        if status.reason:
            line.append(f"  {visible(status.reason)}")
        bar.update(line)
        if status.seq == self.seq or status.snapshot is None:
            return
        self.seq = status.seq
        snap = status.snapshot
        header.set(host=status.host, backend=snap.backend, driver=snap.driver_version,
                   cuda=snap.cuda_version, gpus=len(snap.devices), interval=app.interval,
                   clock=snap.time)
        self.history.append(snap)
        dashboard.update(snap, now=snap.time)

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_select_gpu(self, step: int) -> None:
        self.dashboard.select_gpu(step=step)

    def action_toggle_plot(self) -> None:
        self.dashboard.toggle_plot()

    def action_only_gpu(self) -> None:
        self.dashboard.set_only_selected(not self.dashboard.only_selected)

    def action_sort_processes(self, column: str) -> None:
        self.dashboard.table.sort_by(column)

    def action_open_job(self) -> None:
        """Open the job the selected GPU runs, across the cluster."""
        app = cast(ClusterApp, self.app)
        snap = app.cluster.status(self.host).snapshot
        dev = snap.device(self.dashboard.selected_gpu) if snap is not None and \
            self.dashboard.selected_gpu is not None else None
        job = job_on(dev) if dev is not None else None
        if job is None:
            self.notify("no job on this GPU: none of its processes belongs to a Slurm job, "
                        "pod or container", timeout=3)
            return
        app.open_job(job)


class ClusterApp(ShellApp):
    TITLE = "gputop cluster"
    app_themes: list[str]  # set by install_themes
    theme_warnings: list[str]
    CSS = """
    Screen { background: $background; }
    #summary { height: 1; background: $panel; color: $foreground; }
    #views { height: 1fr; }
    KeyedTable { height: 1fr; }
    #filter { dock: bottom; display: none; height: 3; border: round $primary;
              background: $surface; }
    #filter.-shown { display: block; }
    KeyFooter { background: $panel; }
    """
    KEY_HELP = actions.CLUSTER_VIEW
    BINDINGS = actions.bindings(KEY_HELP)

    def __init__(self, cluster: ClusterSource, *, interval: float = 1.0,
                 theme: str | None = None, themes=None, theme_warnings: Iterable[str] = (),
                 refresh_s: float | None = None, alerts: ClusterAlerts | None = None,
                 jobs: Sequence[str] = (),
                 job_report: Callable[[str], JobReport] | None = None) -> None:
        """``jobs``: the jobs watched (``--slurm``), the first opened by ``j``; ``job_report``:
        what gives a job across the nodes (by default from the nodes' snapshots by the
        attribution of their processes)."""
        super().__init__(theme=theme, themes=themes, theme_warnings=theme_warnings)
        self.cluster = cluster
        self.jobs = tuple(jobs)
        self._job_report = job_report
        self.alerts = alerts
        self.interval = interval
        self.refresh_s = refresh_s or min(1.0, max(0.25, interval / 2))
        self.sort_field = "state"
        self.sort_reverse = False
        self.needle = ""
        self.paused = False
        self._version = -1
        self._order: list[str] = []
        self._summary = ""
        self._users_version = -1
        self._detail_asked: tuple[frozenset[str], bool] | None = None
        self._styles: dict[str, str] = {}
        self.refreshes = 0

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Static(id="summary")
        with ContentSwitcher(initial="nodes", id="views"):
            yield KeyedTable(NODE_COLUMNS, id="nodes", empty_text="no node matches the filter")
            yield KeyedTable(USER_COLUMNS, id="users",
                             empty_text="no GPU processes on the nodes with data")
        yield Input(placeholder="filter nodes: host, state, mode or reason (state:ok)",
                    id="filter")
        yield KeyFooter()

    def on_mount(self) -> None:
        # Held, not queried: queries search the current screen, which may be a node's.
        self.nodes_table = self.query_one("#nodes", KeyedTable)
        self.users_table = self.query_one("#users", KeyedTable)
        self.summary_bar = self.query_one("#summary", Static)
        self.view_switcher = self.query_one("#views", ContentSwitcher)
        self.warn_of_themes()
        self.cluster.start()
        self.nodes_table.focus()
        self.nodes_table.set_sort(COLUMN_OF_FIELD[self.sort_field], self.sort_reverse)
        self.refresh_view(force=True)
        self.set_interval(self.refresh_s, self.refresh_view)

    def on_unmount(self) -> None:
        self.cluster.stop()

    def state_style(self, state: str) -> str:
        """A Rich style string for a state, in the current theme's colours."""
        style = self._styles.get(state)
        if style is None:
            variables = self.get_css_variables()
            var = STATE_VARIABLE.get(STATE_CLASS.get(state, "bad"), "error")
            color = variables.get(var) or variables.get("foreground", "")
            style = f"bold {color}" if state != states.OK else color
            self._styles[state] = style
        return style

    # ------------------------------------------------------------------ refresh
    def refresh_view(self, force: bool = False) -> None:
        """Poll the cluster; the tables repaint only the rows that changed."""
        if (self.paused and not force) or not self.screen_stack:
            return  # paused, or quitting: the timer's last tick can come after every screen
        self.ask_detail()
        version = self.cluster.version
        now = time.monotonic()
        statuses = self.cluster.statuses()
        self.refreshes += 1
        rows = [node_row(s, now) for s in statuses]  # ages move between versions: cheap
        firing = self.alert_on(statuses)
        shown = sort_rows(filter_rows(rows, self.needle), self.sort_field, self.sort_reverse)
        self._order = [r.host for r in shown]
        self.nodes_table.set_rows([table_row(r, self.interval, firing.get(r.host, 0))
                                   for r in shown])
        summary = " " + summary_text(rows)
        problem = self.cluster.problem
        if problem:
            summary += f"  ⚠ {visible(problem)}"  # it may quote the server
        if summary != self._summary:
            self._summary = summary
            self.summary_bar.update(Text(summary))
        # The users view needs every node's whole snapshot: built only while it is shown.
        if self.view_switcher.current == "users" and (force or version != self._users_version):
            self._users_version = version
            self.users_table.set_rows([user_row(u) for u in users_view(statuses)])
        screen = self.screen
        # A node screen just pushed is not built yet; its own mount draws it.
        if isinstance(screen, NodeScreen) and screen.is_mounted:
            screen.refresh_from(self.cluster.status(screen.host), now)
        elif isinstance(screen, JobScreen) and screen.is_mounted:
            screen.refresh_from(self.job_report(screen.job))

    def job_report(self, job: str) -> JobReport:
        """The job across the nodes, computed only while its screen shows (each refresh)."""
        if self._job_report is not None:
            return self._job_report(job)
        return report_from(job, self.cluster.statuses())

    def alert_on(self, statuses: list[NodeStatus]) -> dict[str, int]:
        """Hand the nodes' new snapshots to the alert rules; show a notice per alert fired
        (and per delivery problem); return how many alerts fire on each node."""
        if self.alerts is None:
            return {}
        for alert in self.alerts.observe(statuses):
            if alert.state == "firing":  # node names and summaries come from remotes: no markup
                self.notify(visible(f"{alert.node}: {alert.summary}"), title=f"alert {alert.rule}",
                            severity=_NOTICE[alert.severity], timeout=NOTICE_S, markup=False)
        for problem in self.alerts.problems():
            self.notify(visible(problem), severity="warning", timeout=NOTICE_S, markup=False)
        return self.alerts.firing_by_node()

    # ------------------------------------------------------------------ actions
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # The nodes table's actions do nothing useful over an opened node: hidden there.
        if isinstance(self.screen, (NodeScreen, JobScreen)) and action in NODES_ONLY_ACTIONS:
            return False
        return super().check_action(action, parameters)

    def on_keyed_table_selected(self, event: KeyedTable.Selected) -> None:
        if event.table.id == "nodes":
            self.open_node(event.key)

    def open_node(self, host: str) -> None:
        self.ask_detail(host)
        self.push_screen(NodeScreen(host))

    def open_job(self, job: str) -> None:
        """Show one job's GPUs on all its nodes side by side (its nodes read whole)."""
        self.push_screen(JobScreen(job))
        self.ask_detail(every=True)

    def action_open_job(self) -> None:
        """Open the job watched (``--slurm``; the first of ``--slurm-me``'s)."""
        if not self.jobs:
            self.notify("no job watched: open a node (enter), select a GPU and press j for "
                        "its job", timeout=3)
            return
        self.open_job(self.jobs[0])

    def ask_detail(self, opening: str | None = None, every: bool = False) -> None:
        """Tell a transport that sends summaries (Prometheus) which nodes a view shows whole:
        the opened node, or every node while the users view is shown. Over SSH every node
        comes whole, and its ``detail`` does nothing."""
        screen = self.screen
        opened = opening or (screen.host if isinstance(screen, NodeScreen) else None)
        # Alerts are evaluated on whole snapshots: every node's, while rules are in force.
        # A job's screen reads every node whole: its GPUs may be on any of them.
        every = every or isinstance(screen, JobScreen) or self.view_switcher.current == "users" \
            or (self.alerts is not None and self.alerts.wants_every_node)
        want = (frozenset({opened} if opened else ()), every)
        if want != self._detail_asked:
            self._detail_asked = want
            self.cluster.detail(want[0], every=want[1])

    def action_toggle_users(self) -> None:
        switcher = self.view_switcher
        switcher.current = "users" if switcher.current == "nodes" else "nodes"
        self.refresh_view(force=True)
        (self.users_table if switcher.current == "users" else self.nodes_table).focus()

    def action_sort(self, field: str) -> None:
        if self.sort_field == field:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_field = field
            self.sort_reverse = field in DESCENDING_FIRST
        self.nodes_table.set_sort(COLUMN_OF_FIELD[field], self.sort_reverse)
        self.refresh_view(force=True)

    def action_pause(self) -> None:
        self.paused = not self.paused
        self.notify("paused (connections keep running)" if self.paused else "resumed",
                    timeout=2)

    def theme_cycled(self) -> None:
        self._styles.clear()  # the states' colours are the new theme's
        self.refresh_view(force=True)

    def filter_changed(self, text: str) -> None:
        self.needle = text
        self.refresh_view(force=True)

    def filter_kept(self) -> None:
        self.nodes_table.focus()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Offer Textual's own commands, as the cluster view always has; its own actions by
        name, as the dashboard offers them, are a change of its own to make."""
        return App.get_system_commands(self, screen)


def run_cluster(config: ClusterViewConfig, cluster: ClusterSource,
                alerts: ClusterAlerts | None = None, jobs: Sequence[str] = (),
                job_report: Callable[[str], JobReport] | None = None) -> int:
    from gputop.tui.themes import all_themes

    themes, warnings = all_themes()
    # an unknown theme: the shell's UsageError, which says why a user's file of that name failed
    app = ClusterApp(cluster, interval=config.interval, theme=config.theme, themes=themes,
                     theme_warnings=warnings, alerts=alerts, jobs=jobs, job_report=job_report)
    with Lifeline(quit_code, Terminal()) as lifeline:
        try:
            return app.run_until_stopped(lifeline)
        except Stopped as stop:  # before the app's first event: nothing was drawn yet
            return stop.code
        finally:
            lifeline.detach()
            cluster.stop()
            if alerts is not None:
                alerts.close()  # the channels' last chance at what they hold
