"""The cluster view's nodes table: its columns and the sort keys under their titles."""

from __future__ import annotations

from gputop.tui.widgets.keyed_table import Column

NODE_COLUMNS = (
    Column("host", "HOST", 16, sort_key="N"),
    Column("state", "STATE", 17, sort_key="A"),
    Column("mode", "MODE", 10),
    Column("gpus", "GPUS", 4, right=True, sort_key="G"),
    Column("util", "UTIL", 5, right=True, sort_key="U"),
    Column("memory", "MEMORY", 13, right=True, sort_key="M"),
    Column("power", "POWER", 12, right=True, sort_key="W"),
    Column("hints", "HINTS", 5, right=True, sort_key="H"),
    Column("age", "AGE", 5, right=True, sort_key="E"),
    Column("reason", "REASON", 0),
)
# sort key letter -> aggregate.SORT_KEYS field
SORT_LETTERS = {"N": "host", "A": "state", "G": "gpus", "U": "util", "M": "memory", "W": "power",
                "H": "hints", "E": "age"}
