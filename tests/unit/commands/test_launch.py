"""The dashboard's pre-frame: plain text on the alternate screen before Textual loads, on the
header's row and nowhere else, so that Textual's first frame moves nothing it showed (#26)."""

import io

from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.commands.dashboard import draw_first_frame, first_frame_text


def test_the_pre_frame_is_the_headers_first_words_on_one_line_cut_to_the_terminal():
    text = first_frame_text("node-a", 80)
    assert text == "gputop node-a  starting the dashboard…"
    assert "\n" not in text  # one row: the header's; the GPUs come with Textual, in place
    assert first_frame_text("node-a", 12) == "gputop node-"


def test_a_host_name_cannot_move_the_cursor():
    assert "\x1b" not in first_frame_text("evil\x1b[2Jnode", 80)


def test_no_first_frame_where_stdout_is_not_a_terminal():
    out = io.StringIO()
    backend = SimBackend(BackendOptions())
    backend.open()
    assert draw_first_frame(backend.info().host, out) is False
    assert out.getvalue() == ""


def test_the_dashboard_runs_after_the_command_line_parser_is_gone(monkeypatch):
    """The parser (a quarter of a MB of actions and help) lived as long as the dashboard (#26)."""
    import weakref

    from gputop.commands import dashboard, main

    built = []
    real = main.build_parser

    def build_parser():
        parser = real()
        built.append(weakref.ref(parser))
        return parser

    alive = []
    monkeypatch.setattr(main, "build_parser", build_parser)
    monkeypatch.setattr(dashboard, "has_terminal", lambda: True)
    monkeypatch.setattr(dashboard, "run_dashboard",
                        lambda config: alive.append(built[0]() is not None) or 0)
    assert main.main(["--backend", "sim", "--interval", "2", "--no-config"]) == 0
    assert alive == [False]
