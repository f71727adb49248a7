"""A name in nvidia-smi CSV adds neither a row nor a column and never acts on a terminal.

nvidia-smi writes values verbatim, unquoted (see gputop/formats/query_csv.py): an ordinary name is
written byte for byte as it does. A name gputop writes itself has its controls made visible, a
comma written ``\\x2c`` and a double quote ``\\x22``; a replayed log's cells keep their commas
(that row is what the log said) but not their controls."""

from __future__ import annotations

import pytest

from gputop.formats.query_csv import text_cell


@pytest.mark.parametrize("name", ["python", "/root/tools/memhog", "./gpu_burn",
                                  "NVIDIA H100 80GB HBM3", "训练", "[celeryd: x]"])
def test_ordinary_names_are_written_as_nvidia_smi_writes_them(name):
    assert text_cell(name) == name


@pytest.mark.parametrize("name, cell", [
    ("/usr/bin/x\n31337,/usr/bin/forged,99999, 1024 MiB",
     r"/usr/bin/x^J31337\x2c/usr/bin/forged\x2c99999\x2c 1024 MiB"),
    ('"quoted', r"\x22quoted"),  # a CSV reader would read past the row's end for its match
    ("a\r\nb", "a^M^Jb"),
    ("\x1b]0;pwned\x07\u009b\u202e", r"^[]0;pwned^G\x9b\u202e"),
])
def test_a_name_cannot_start_a_row_or_a_column_or_a_quoted_field(name, cell):
    assert text_cell(name) == cell


