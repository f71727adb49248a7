"""gputop.core.visible: every class of character a terminal acts on, hides or reorders is written out
visibly; printable text passes as it is; applying it twice changes nothing. And the JSON writer
never writes a lone surrogate, whatever the source of a string."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gputop.core import jsonout
from gputop.core.untrusted import printable
from gputop.core.visible import valid_unicode, visible


@pytest.mark.parametrize("code", [*range(0x20), 0x7F])
def test_c0_controls_and_del_are_caret_notation(code):
    assert visible(f"a{chr(code)}b") == f"a^{chr(code ^ 0x40)}b"


def test_caret_notation_as_cat_v_writes_it():
    assert visible("\x1b]0;pwned\x07") == "^[]0;pwned^G"
    assert visible("\x00\t\n\r\x7f") == "^@^I^J^M^?"


@pytest.mark.parametrize("code", range(0x80, 0xA0))
def test_c1_controls_are_escaped(code):
    assert visible(chr(code)) == f"\\x{code:02x}"


BIDI = [0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068,
        0x2069, 0x061C]


@pytest.mark.parametrize("code", BIDI)
def test_bidirectional_marks_embeddings_overrides_and_isolates_are_escaped(code):
    assert visible(f"evil{chr(code)}exe") == f"evil\\u{code:04x}exe"


@pytest.mark.parametrize("char, shown", [
    ("\u200b", "\\u200b"),  # zero-width space
    ("\u200d", "\\u200d"),  # zero-width joiner
    ("\ufeff", "\\ufeff"),  # byte order mark
    ("\u00ad", "\\xad"),  # soft hyphen
    ("\u2028", "\\u2028"),  # line separator
    ("\u2029", "\\u2029"),  # paragraph separator
    ("\u00a0", "\\xa0"),  # no-break space
    ("\U000e0001", "\\U000e0001"),  # language tag
    ("\ue000", "\\ue000"),  # private use
])
def test_other_invisible_format_and_separator_characters_are_escaped(char, shown):
    assert visible(char) == shown


def test_a_byte_surrogateescape_kept_is_shown_as_that_byte_and_other_surrogates_escaped():
    assert visible(b"BAD\xff\x9b".decode("utf-8", "surrogateescape")) == "BAD\\xff\\x9b"
    assert visible("\ud800") == "\\ud800"


@pytest.mark.parametrize("text", ["python train.py", "ölçü", "训练", "🚀 job", "a^b\\c",
                                  "[@click=app.quit]quit[/]", "e\u0301"])
def test_printable_text_passes_as_it_is(text):
    assert visible(text) is text


@given(st.text())
def test_the_result_is_printable_and_visible_of_it_is_itself(text):
    shown = visible(text)
    assert shown.isprintable()
    assert visible(shown) == shown
    assert all(unicodedata.category(c) not in ("Cc", "Cf", "Cs") for c in shown)


def test_untrusted_printable_caps_then_makes_visible():
    assert printable("evil\x1b[2J\x07") == "evil^[[2J^G"
    assert printable("x" * 50 + "\x1b", 40) == "x" * 40 + "…"


# ---------------------------------------------------------------------------- valid Unicode

def test_valid_unicode_replaces_each_lone_surrogate():
    assert valid_unicode(b"BAD\xff\xfe".decode("utf-8", "surrogateescape")) == "BAD\ufffd\ufffd"
    assert valid_unicode("\ud83d") == "\ufffd"
    assert valid_unicode("ok 🚀") == "ok 🚀"


def strict_loads(text: str):
    """What a strict parser (Go, Rust, jq) asks of JSON text: valid UTF-8 throughout."""
    doc = json.loads(text)

    def check(value):
        if isinstance(value, str):
            value.encode("utf-8")  # raises on a lone surrogate
        elif isinstance(value, dict):
            for k, v in value.items():
                check(k)
                check(v)
        elif isinstance(value, list):
            for v in value:
                check(v)

    check(doc)
    return doc


@pytest.mark.parametrize("kwargs", [{}, {"separators": (",", ":")}, {"indent": 1},
                                    {"ensure_ascii": False}])
def test_json_never_holds_a_lone_surrogate_whatever_the_source(kwargs):
    undecodable = b"BAD\xff\xfe".decode("utf-8", "surrogateescape")  # psutil, os.listdir
    from_json = json.loads('"x\\udcff"')  # a server's answer may spell one
    doc = {"command": undecodable, from_json: [from_json, {"k": "\ud800"}], "ok": "🚀 a\x1bb"}
    text = jsonout.dumps(doc, **kwargs)
    assert strict_loads(text) == {"command": "BAD\ufffd\ufffd",
                                  "x\ufffd": ["x\ufffd", {"k": "\ufffd"}], "ok": "🚀 a\x1bb"}


def test_ordinary_json_is_written_as_before():
    doc = {"name": "🚀 ölçü", "n": [1, 2.5, None, True]}
    assert jsonout.dumps(doc) == json.dumps(doc)
