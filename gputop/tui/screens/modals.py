"""Modal screens: help, signal confirmation, prompts (the process view is in process_view.py,
the saturation panel's screen in saturation.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from gputop.core.visible import visible
from gputop.tui.screens.tinted import TintsBeneath
from gputop.tui.widgets.processes import ProcRow

if TYPE_CHECKING:
    from gputop.tui.widgets.grouped import GroupRow

HELP_KEY_WIDTH = 16
SCROLL_KEYS = frozenset({"up", "down", "pageup", "pagedown", "home", "end"})


Answer = TypeVar("Answer")


class Dialog(TintsBeneath, ModalScreen[Answer]):
    """A dialog over the screen beneath it, dimmed."""


def _keys(bindings) -> set[str]:
    """Return the key names ``bindings`` (Textual's BINDINGS) bind."""
    return {k for b in bindings if isinstance(b, Binding) for k in b.key.split(",")}


class HelpScreen(Dialog[None]):
    # `q`, esc and `?` close it: what was set (filter, sort, grouping) stays; ctrl+c quits
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 76; max-width: 100%; height: 90%; border: round $primary;
                                  background: $surface; padding: 0 1; }
    """

    def __init__(self, rows: list[tuple[str, str]]) -> None:
        super().__init__()
        self.rows = rows

    def show(self, rows: list[tuple[str, str]]) -> None:
        """List ``rows`` from its top when shown again (the app keeps one help screen: building
        it, its CSS and its layout twice over cost more than drawing it)."""
        if rows != self.rows:
            self.rows = rows
            self.query_one("#help-text", Static).update(self._text())
        self.query_one(VerticalScroll).scroll_home(animate=False)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self._text(), id="help-text")

    def _text(self) -> Text:
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
        text.append("\nctrl+p opens the command palette with the same actions. q or esc closes"
                    " this and every screen over the view; here, any other key above closes it"
                    " and does its work; ctrl+c quits from anywhere.")
        return text

    def action_dismiss(self) -> None:  # type: ignore[override]  # Screen's takes a result (#25 tui)
        self.dismiss(None)

    def on_key(self, event: events.Key) -> None:
        """Close the help and hand the view any other key it has (`p` pauses, `t` changes the
        theme, as nvitop returns on any key): the help lists keys so that they are pressed.
        The keys that scroll it stay with it."""
        if event.key in SCROLL_KEYS or event.key in _keys(self.BINDINGS) \
                or event.key not in _keys(type(self.app).BINDINGS):
            return
        event.stop()
        self.dismiss(None)
        self.app.call_later(self.app.simulate_key, event.key)


class ConfirmSignal(Dialog[bool]):
    BINDINGS = [Binding("y", "answer(True)", "yes"), Binding("n,escape,q", "answer(False)", "no")]
    # No has the focus from the first frame: focused once mounted, the first frame showed Yes
    # focused (Textual's first focusable) and a second frame moved it (#26)
    AUTO_FOCUS = "#no"
    DEFAULT_CSS = """
    ConfirmSignal { align: center middle; }
    ConfirmSignal > Vertical { width: 70; max-width: 100%; height: auto; border: thick $error;
                               background: $surface; padding: 1 2; }
    ConfirmSignal Horizontal { height: auto; margin-top: 1; }
    ConfirmSignal Button { margin-right: 2; }
    """

    def __init__(self, signal_name: str, row: ProcRow | GroupRow) -> None:
        super().__init__()
        self.signal_name = signal_name
        self.row = row  # a ProcRow, or a GroupRow: then every process of the group
        self.pids = [row.process.pid] if isinstance(row, ProcRow) else row.group.pids

    def _lines(self) -> tuple[str, str]:
        """Return the question and what it would reach: user, GPU, every PID, every command
        whole (it wraps: a cut command could be another run's)."""
        row = self.row
        if isinstance(row, ProcRow):
            p = row.process
            return (f" to process {p.pid}?",
                    f"user {visible(p.user or '?')} · GPU {row.gpu} · PID {p.pid}\n"
                    f"{visible(p.command or p.name or '?')}")
        group = row.group
        n = len(self.pids)
        users, gpus = group.users or ["?"], group.gpus
        return (f" to {n} process{'es' if n != 1 else ''} of {visible(group.label)}?",
                f"user{'s' if len(users) > 1 else ''} {', '.join(map(visible, users))}"
                f" · GPU{'s' if len(gpus) > 1 else ''} {', '.join(map(str, gpus))}\n"
                "PIDs " + ", ".join(str(pid) for pid in self.pids) + "\n"
                + "\n".join(self._some(group.commands)))

    @staticmethod
    def _some(commands: list[str], most: int = 4) -> list[str]:
        """``commands`` made visible, the first ``most`` of a longer list and how many more (the
        dialog stays on the screen; the PIDs above are all there)."""
        shown = [visible(c) for c in commands]
        if len(shown) > most + 1:
            shown = [*shown[:most], f"and {len(shown) - most} more commands"]
        return shown

    def compose(self) -> ComposeResult:
        question, detail = self._lines()
        with Vertical():
            yield Label(Text.assemble(("Send ", ""), (self.signal_name, "bold"), (question, "")))
            # every PID shows: the list wraps rather than hiding some
            yield Static(Text(detail, overflow="fold"), id="targets")
            with Horizontal():
                yield Button(f"Yes, send {self.signal_name} (y)", variant="error", id="yes")
                yield Button("No (n / esc)", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class Prompt(Dialog[str | None]):
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

    async def on_key(self, event: events.Key) -> None:
        """Type into the box the keys that reached this screen before the box was built and
        focused (``g`` and a position in one read: a paste, fast typing over SSH); without
        this they were lost. Keys typed into the box itself never come here: it takes them."""
        box = self.query_one(Input)
        if event.key == "enter":
            await box.action_submit()
        elif event.is_printable and event.character:
            box.insert_text_at_cursor(event.character)
        else:
            return
        event.stop()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
