"""The key registry (gputop.tui.actions): one entry per key, and the apps' bindings from it."""

from __future__ import annotations

import pytest

from gputop.tui import actions
from gputop.tui.app import GputopApp
from gputop.tui.cluster import ClusterApp


@pytest.mark.parametrize("registry", [actions.DASHBOARD, actions.CLUSTER_VIEW])
def test_each_key_is_bound_once_and_each_footer_place_is_taken_once(registry):
    """A key has one meaning, except a replay key bound again after it: the replay's is live
    only in a replay, and a key's first live binding runs (left/right seek, or scroll)."""
    bound = [(k, action.group) for action in registry for key in action.bound
             for k in key.keys.split(",")]
    first: dict[str, str] = {}
    for k, group in bound:
        assert k not in first or first[k] == actions.REPLAY != group, k
        first.setdefault(k, group)
    places = [key.footer for action in registry for key in action.bound if key.footer]
    assert sorted(places) == list(range(1, len(places) + 1))


def test_the_footer_shows_the_registrys_keys_in_its_order():
    for app, registry in ((GputopApp, actions.DASHBOARD), (ClusterApp, actions.CLUSTER_VIEW)):
        shown = [b.key for b in app.BINDINGS if b.show]
        by_place = sorted((key for action in registry for key in action.bound if key.footer),
                          key=lambda key: key.footer)
        assert shown == [key.keys for key in by_place]


def test_the_gates_are_read_from_the_registry():
    from gputop.tui import app, cluster

    assert app.CHANGING_ACTIONS == {"signal", "record", "screenshot"}
    assert app.REPLAY_ACTIONS == {"replay_toggle", "replay_step", "replay_speed", "replay_seek",
                                  "replay_seek_prompt"}
    assert app.DASHBOARD_ACTIONS == {"filter", "clear_filter", "only_gpu", "select_gpu",
                                     "toggle_plot", "details", "group", "sort", "sideways"}
    assert cluster.NODES_ONLY_ACTIONS == {"sort", "filter", "clear_filter", "toggle_users",
                                          "open_job"}
