"""The shared keyed table: cell fitting and the span of cells a changed row repaints."""

from gputop.tui.widgets.keyed_table import Column, KeyedTable, fit
from gputop.tui.widgets.processes import ProcessTable

COLUMNS = (Column("a", "A", 4), Column("b", "B", 6, right=True), Column("rest", "REST", 0))


def test_fit_pads_and_cuts_by_terminal_cells():
    assert fit("abc", 5) == "abc  " and fit("abc", 5, right=True) == "  abc"
    assert fit("abcdef", 4) == "abc…"
    # Wide characters count two cells each: the cut keeps the column exactly 6 cells wide.
    assert fit("训练任务脚本", 6) == "训练 …"  # a wide character never straddles the cut
    assert fit("训练", 6, right=True) == "  训练"


def test_changed_span_covers_text_and_style_changes_only():
    table = KeyedTable(COLUMNS)
    width = 30  # widths 4, 6, 18 with single gaps
    assert table.column_widths(width) == (4, 6, 18)
    a = ("x", "1", "same")
    assert table._cells_span(a, ("x", "2", "same"), width) == (5, 11)
    assert table._cells_span(a, ("y", "2", "same"), width) == (0, 11)
    # Same text, another style (a node turning "bad"): that cell is repainted too.
    assert table._cells_span(a, a, width, (None, None, None), ("bad", None, None)) == (0, 4)


def test_process_table_is_a_keyed_table_with_its_own_look():
    table = ProcessTable()
    assert isinstance(table, KeyedTable) and table.COMPONENT_PREFIX == "proctable"
    assert table.sort_column == "gpu" and table.sort_descending is False
    assert table.empty_message() == "no GPU processes"
    table.needle = "bob"
    assert table.empty_message() == "no process matches the filter 'bob'"


def test_the_process_table_holds_only_its_own_component_classes():
    """Textual builds a styled DOM node per component class (#26's memory), and restyles each
    at a theme change: none for the generic table's, which the process table never draws with."""
    assert ProcessTable._get_component_classes() == {
        "proctable--header", "proctable--sorted", "proctable--cursor", "proctable--key",
        "proctable--empty"}
    assert "keyedtable--bad" in KeyedTable._get_component_classes()
