"""One layout from the first frame, in a real terminal (#26): from launch, through the pre-frame
and Textual's first frame, to the samples and host facts that come after, nothing on the screen
moves. Before, the host line came a second after launch and pushed the cards and the table down
a row, and Textual's first frame had the cards one to a row before laying them out two to a row."""

from __future__ import annotations

import time

from tests.support.screen_layout import final_layout_s, layout_of


def test_the_first_full_frame_is_the_final_layout(pane):
    start = time.monotonic()
    p = pane("--scenario", "crowded", size=(120, 40))
    times = final_layout_s(p.screen, start, seconds=4.0)  # four samples, three host readings
    seen = "\n".join(f"{when:.2f} s: {layout}" for when, layout, _ in times.seen)
    assert times.first_full_s is not None, seen
    assert times.reflows == 0, seen
    final = layout_of(p.screen())
    assert final[:2] == (("header", 0, 0), ("host", 1, 0)), final  # the hint bar's row below
    assert final[2][:2] == ("gpu", 3), final
    # the pre-frame, where there was one, is the header's row and nothing else; a capture may
    # also catch the first full frame half written (tmux shows what has arrived): its top part
    full = next(layout for when, layout, _ in times.seen if when == times.first_full_s)
    assert all(layout in ((), (("header", 0, 0),)) or full[:len(layout)] == layout
               for when, layout, _ in times.seen if when < times.first_full_s), seen
