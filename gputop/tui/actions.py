"""The keys of the dashboard and of the cluster view, each declared once.

An :class:`Action` is one row of the help screen (`?`): the keys as the help writes them, what they
do, and the help's group. Its :class:`Key` entries are the Textual bindings behind the row: the key
names, the action they run, the footer's label and place, and the command palette's title. The
apps' ``BINDINGS``, the help rows, the footer and the palette are all derived from these tuples (the
idea of harlequin's ``actions.py``), so a key cannot say one thing in the footer and another in
`?`, and adding a key is one entry here and its ``action_*`` method.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from textual.binding import Binding, BindingType

from gputop.tui.widgets.nodes import NODE_COLUMNS, SORT_LETTERS
from gputop.tui.widgets.processes import COLUMNS as PROCESS_COLUMNS
from gputop.tui.widgets.processes import FILTER_MATCHES

GENERAL, GPUS, PROCESSES, REPLAY, CLUSTER = "General", "GPUs", "Processes", "Replay", "Cluster"


@dataclass(frozen=True)
class Key:
    """One binding: Textual's key names (comma-separated), the action it runs with its
    arguments, its label (the footer's word where it shows), its place in the footer from 1 (0:
    not in the footer) and its palette title ("": the help row's description, capitalised)."""

    keys: str
    action: str
    label: str
    footer: int = 0
    title: str = ""
    priority: bool = False  # taken before the focused widget sees it (see box_key)

    @property
    def name(self) -> str:
        """Return the action's name without its arguments (``signal('SIGTERM')``: ``signal``)."""
        return self.action.partition("(")[0]


@dataclass(frozen=True)
class Action:
    """One row of the help: ``keys`` as the help writes them, what they do, the help's group, and
    the bindings behind it (none: bound elsewhere, such as ctrl+p or the table's own keys).

    ``changes``: it changes something, a process or a file, so ``--readonly`` takes it away.
    ``on_table``: it acts on the main view's table (the dashboard's GPUs and processes, the
    cluster's nodes), so a screen over that view takes it away."""

    keys: str
    description: str
    group: str
    bound: tuple[Key, ...] = ()
    changes: bool = False
    on_table: bool = False

    @property
    def name(self) -> str:
        """Return the name of the action its keys run ("" for a row with no binding of its own)."""
        return self.bound[0].name if self.bound else ""

    def palette_title(self, key: Key) -> str:
        """Return the palette's title for ``key``: its own, else the description capitalised."""
        return key.title or self.description[0].upper() + self.description[1:]


def bindings(actions: Iterable[Action]) -> list[BindingType]:
    """Return the Textual bindings of ``actions``: the footer's in the footer's order first (the
    footer shows them in binding order), then the others in the help's order."""
    keys = [key for action in actions for key in action.bound]
    shown = sorted((k for k in keys if k.footer), key=lambda k: k.footer)
    return [Binding(k.keys, k.action, k.label, show=bool(k.footer), priority=k.priority)
            for k in (*shown, *(k for k in keys if not k.footer))]


def box_key(keys: str, action: str, label: str, footer: int = 0, title: str = "") -> Key:
    """A key that opens a text box. A priority key, so that it is handled in turn with the keys
    typed after it in the same read (a paste, fast typing over SSH), which then reach the box it
    opens (or the screen that holds it: modals.Prompt), not the view's bindings; inside a text
    box it is text (ShellApp.check_action)."""
    return Key(keys, action, label, footer, title, priority=True)


def filter_key(footer: int) -> Key:
    """`/`: the filter box."""
    return box_key("slash", "filter", "filter", footer)


@cache  # asked on every key and footer refresh, of the same registry
def box_actions(actions: tuple[Action, ...]) -> frozenset[str]:
    """Return the names of the actions that open a text box (their keys are text in one)."""
    return frozenset(k.name for a in actions for k in a.bound if k.priority)


def names(actions: Iterable[Action], *, changes: bool = False, on_table: bool = False,
          group: str | None = None) -> frozenset[str]:
    """Return the names of the actions that change something, act on the main view's table, or
    belong to ``group`` (whichever is asked)."""
    return frozenset(a.name for a in actions if a.name and (
        (changes and a.changes) or (on_table and a.on_table) or a.group == group))


SIGNALS = (("k", "SIGTERM", 6), ("K", "SIGKILL", 0), ("i", "SIGINT", 0))
SIGNAL_KEYS = frozenset(key for key, _, _ in SIGNALS)

DASHBOARD: tuple[Action, ...] = (
    Action("q / ctrl+c", "quit (exit status 0)", GENERAL, (Key("q", "quit", "quit", 1),)),
    Action("?", "this help", GENERAL, (Key("question_mark", "help", "help", 2),)),
    Action("ctrl+p", "command palette (the same actions by name)", GENERAL),
    Action("p", "pause / resume sampling", GENERAL, (Key("p", "pause", "pause", 3),)),
    Action("+ / -", "sample less / more often", GENERAL, (
        Key("plus,equals_sign", "interval(1)", "slower", title="Sample less often (+)"),
        Key("minus", "interval(-1)", "faster", title="Sample more often (-)"))),
    Action("t", "next theme", GENERAL, (Key("t", "cycle_theme", "theme", 4),)),
    Action("s", "saturation panel (SM activity vs GPU-Util)", GENERAL,
           (Key("s", "saturation", "saturation", 7),)),
    Action("a", "power-limit advisor", GENERAL, (Key("a", "advisor", "advisor"),)),
    Action("x", "Xid errors seen: meaning, the job each hit, what to do", GENERAL,
           (Key("x", "xid_events", "Xid errors"),)),
    Action("!", "alerts: what fired and resolved, acknowledge (a, A), channels' deliveries",
           GENERAL, (Key("exclamation_mark", "alerts", "alerts"),)),
    Action("r", "start / stop recording: CSV log and snapshot stream", GENERAL,
           (Key("r", "record", "record"),), changes=True),
    Action("< / >", "select the previous / next GPU", GPUS, (
        Key("less_than_sign", "select_gpu(-1)", "previous GPU", title="Select previous GPU"),
        Key("greater_than_sign", "select_gpu(1)", "next GPU", title="Select next GPU")),
        on_table=True),
    Action("h", "history plot of the selected GPU", GPUS,
           (Key("h", "toggle_plot", "history plot"),), on_table=True),
    Action("o", "only the selected GPU's processes", GPUS,
           (Key("o", "only_gpu", "only this GPU"),), on_table=True),
    Action("up/down pgup/pgdn home/end", "move in the process table", PROCESSES),
    # last in the footer: at 80 columns it has no room left for it (from 92 columns it shows)
    Action("enter / d", "the selected process: live plots, facts, signal keys", PROCESSES,
           (Key("d", "details", "details", 8),), on_table=True),
    Action("/", f"filter by {FILTER_MATCHES} (esc clears)", PROCESSES,
           (filter_key(5),), on_table=True),
    Action("esc", "clear the filter", PROCESSES,
           (Key("escape", "clear_filter", "clear filter"),), on_table=True),
    Action("b", "group by job, by user, or none (cycles)", PROCESSES,
           (Key("b", "group", "group"),), on_table=True),
    *(Action(c.sort_key, f"sort by {c.title} (again: reverse)", PROCESSES,
             (Key(c.sort_key, f"sort('{c.key}')", f"sort by {c.title}",
                  title=f"Sort by {c.title}"),), on_table=True)
      for c in PROCESS_COLUMNS if c.sort_key),
    *(Action(key, f"send {signal} to the selected process (asks first)", PROCESSES,
             (Key(key, f"signal('{signal}')", signal, footer,
                  title=f"Send {signal} to the selected process"),), changes=True)
      for key, signal, footer in SIGNALS),
    Action("space", "play / pause the replay", REPLAY,
           (Key("space", "replay_toggle", "play/pause"),)),
    Action(", / .", "step one sample back / forward", REPLAY, (
        Key("comma", "replay_step(-1)", "step back", title="Replay: step back"),
        Key("full_stop", "replay_step(1)", "step forward", title="Replay: step forward"))),
    Action("[ / ]", "replay slower / faster", REPLAY, (
        Key("left_square_bracket", "replay_speed(0.5)", "slower replay", title="Replay: slower"),
        Key("right_square_bracket", "replay_speed(2.0)", "faster replay",
            title="Replay: faster"))),
    Action("left / right", "seek 10 s back / forward", REPLAY, (
        Key("left", "replay_seek(-10)", "back 10 s", title="Replay: back 10 s"),
        Key("right", "replay_seek(10)", "forward 10 s", title="Replay: forward 10 s"))),
    Action("g", "go to a second of the recording", REPLAY,
           (box_key("g", "replay_seek_prompt", "go to second"),)),
    # after the replay's left/right: a key's first binding that is live here runs (in a replay
    # left/right seek, and shift+left/right scroll); the help still lists it under Processes
    Action("left / right  shift+left / shift+right",
           "scroll the commands sideways (in a replay, where left / right seek: with shift)",
           PROCESSES, (
               Key("left,shift+left", "sideways(-1)", "scroll left", title="Scroll commands left"),
               Key("right,shift+right", "sideways(1)", "scroll right",
                   title="Scroll commands right")),
           on_table=True),
)

CLUSTER_VIEW: tuple[Action, ...] = (
    Action("q", "quit", CLUSTER, (Key("q", "quit", "quit", 1),)),
    Action("?", "this help", CLUSTER, (Key("question_mark", "help", "help", 2),)),
    Action("enter", "open the node in the dashboard widgets", CLUSTER),
    # backspace is the node screen's own key (gputop.tui.cluster.NodeScreen)
    Action("esc / backspace", "back from a node; clears the filter", CLUSTER,
           (Key("escape", "clear_filter", "clear filter"),), on_table=True),
    Action("u", "switch between the nodes table and the users view", CLUSTER,
           (Key("u", "toggle_users", "users / nodes", 3),), on_table=True),
    Action("/", "filter nodes: text in host, state, mode or reason; state:NAME for one state",
           CLUSTER, (filter_key(6),), on_table=True),
    *(Action(c.sort_key, f"sort by {c.title.lower()} (again: reverse)", CLUSTER,
             (Key(c.sort_key, f"sort('{SORT_LETTERS[c.sort_key]}')", f"sort by {c.title}"),),
             on_table=True)
      for c in NODE_COLUMNS if c.sort_key),
    Action("j", "open the job watched (--slurm) across its nodes: its GPUs side by side, its "
           "straggler flagged; in a node: the selected GPU's job", CLUSTER,
           (Key("j", "open_job", "job"),), on_table=True),
    Action("p", "pause / resume the screen (connections keep running)", CLUSTER,
           (Key("p", "pause", "pause", 4),)),
    Action("t", "next theme", CLUSTER, (Key("t", "cycle_theme", "theme", 5),)),
    # the node screen's own keys (gputop.tui.cluster.NodeScreen)
    Action("< / >  h  o", "in a node: select GPU, history plot, only this GPU's processes",
           CLUSTER),
)
