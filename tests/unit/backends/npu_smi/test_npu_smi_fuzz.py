"""Property-based fuzzing: mutated real samples and random text give a result or a typed error.

No other exception may escape a parser, and a parse error always names a real line.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import fields

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gputop.backends.npu_smi.chip_info import (
    parse_board,
    parse_common,
    parse_health,
    parse_memory,
    parse_power,
    parse_temp,
    parse_usages,
)
from gputop.backends.npu_smi.info_help import parse_help
from gputop.backends.npu_smi.inventory import parse_info_l, parse_info_m
from gputop.backends.npu_smi.mapping import health_hints, table_devices
from gputop.backends.npu_smi.proc_mem import parse_proc_mem
from gputop.backends.npu_smi.syntax import NpuSmiParseError
from gputop.backends.npu_smi.table import NpuTable, parse_table
from gputop.backends.npu_smi.topo import parse_topo
from gputop.backends.npu_smi.watch import parse_watch
from gputop.core.untrusted import number_ok
from tests.support.npu_smi import FIXTURES

PARSERS: dict[str, Callable[[str], object]] = {
    "info_": parse_table,
    "info-h": parse_help,
    "info-l": parse_info_l,
    "info-m": parse_info_m,
    "info-watch": parse_watch,
    "info-t-topo": parse_topo,
    "info-t-usages": parse_usages,
    "info-t-common": parse_common,
    "info-t-memory": parse_memory,
    "info-t-power": parse_power,
    "info-t-temp": parse_temp,
    "info-t-health": parse_health,
    "info-t-board": parse_board,
    "info-t-proc-mem": parse_proc_mem,
}


def parser_for(name: str) -> Callable[[str], object]:
    for prefix in sorted(PARSERS, key=len, reverse=True):
        if name.startswith(prefix):
            return PARSERS[prefix]
    raise AssertionError(name)


SAMPLES = sorted((p.name, p.read_text(encoding="utf-8")) for p in FIXTURES.iterdir())
ALL_PARSERS = list(dict.fromkeys(PARSERS.values()))

# Characters that matter to the layouts, plus some that never should appear.
TOKEN = st.sampled_from(list("|+-=/ .:\t\n0123456789ANOKXx%()[]") + ["NA", "\x00", "é", "NPU ID",
                                                                  "Chip", "\r", "\x0b"])


def fragments(max_size: int) -> st.SearchStrategy[str]:
    return st.lists(TOKEN, max_size=max_size).map("".join)


def check(parse: Callable[[str], object], text: str) -> None:
    try:
        result = parse(text)
    except NpuSmiParseError as err:
        assert 0 <= err.line <= len(text.splitlines())
        assert str(err)
        return
    if isinstance(result, NpuTable):
        # Whatever parses also maps to the model without error.
        devices = table_devices(result)
        for dev in devices:  # and holds only numbers the model may hold
            for f in fields(dev):
                value = getattr(dev, f.name)
                assert type(value) not in (int, float) or number_ok(value), (f.name, value)
        health_hints(devices, {d.index: c.health for d, c in zip(devices, result.chips,
                                                                    strict=True)})


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, str]:
    name, text = draw(st.sampled_from(SAMPLES))
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "char", "insert", "truncate",
                                   "replace_token"]))
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "char":
            line = lines[i]
            k = draw(st.integers(0, max(0, len(line) - 1)))
            lines[i] = line[:k] + draw(TOKEN) + line[k + 1:]
        elif op == "insert":
            lines.insert(i, draw(fragments(40)) + "\n")
        elif op == "truncate":
            k = draw(st.integers(0, len(lines[i])))
            lines = lines[:i] + [lines[i][:k]]
        else:
            token = draw(st.sampled_from(["OK", "0", "/", "|", "NA", "-", "0000:C1:00.0", "910B4",
                                          "Critical", "99999999999999999999999"]))
            repl = draw(st.sampled_from(["", "NA", "-", "x", "|", "/ /", "1e9", "-1",
                                         "Warning", "  "]))
            lines[i] = lines[i].replace(token, repl, 1)
    return name, "".join(lines)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_real_samples_give_only_typed_errors(sample: tuple[str, str]) -> None:
    name, text = sample
    check(parser_for(name), text)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(ALL_PARSERS), fragments(300))
def test_random_text_gives_only_typed_errors(parse: Callable[[str], object], text: str) -> None:
    check(parse, text)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(ALL_PARSERS), st.text(max_size=200))
def test_random_unicode_gives_only_typed_errors(parse: Callable[[str], object], text: str) -> None:
    check(parse, text)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SAMPLES), st.sampled_from(ALL_PARSERS))
def test_every_sample_through_every_parser(sample: tuple[str, str], parse) -> None:
    check(parse, sample[1])


# ------------------------------------------------------------------ very long lines, big numbers

LONG = 40_000


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sample=st.sampled_from(SAMPLES), where=st.integers(0, 200), fill=TOKEN)
def test_a_40k_character_line_parses_in_well_under_a_second(sample, where, fill) -> None:
    """Every parser is linear: one line of a real sample (the header included) stretched to
    40 k characters is parsed or refused in well under a second (parse_watch took 23 s)."""
    name, text = sample
    lines = text.splitlines()
    k = where % len(lines)
    lines[k] = lines[k] + fill * (LONG // max(1, len(fill)))
    started = time.perf_counter()
    check(parser_for(name), "\n".join(lines))
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize("head", ["NpuID(Idx) " + "x" * LONG, "NpuID(Idx) " + "(" * LONG,
                                  "NpuID(Idx) " + "Metric(%) " * (LONG // 10)],
                         ids=["letters", "parentheses", "many-columns"])
def test_parse_watch_long_headers(head) -> None:
    started = time.perf_counter()
    check(parse_watch, head + "\n0 1\n")
    assert time.perf_counter() - started < 0.5


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sample=st.sampled_from(SAMPLES),
       number=st.sampled_from(["9" * 400, "-" + "9" * 40, "1e400", "nan", "inf", "-0",
                               "9" * 4400, "0x" + "f" * 4000]))
def test_huge_and_non_finite_numbers_are_typed_errors_or_model_numbers(sample, number) -> None:
    """Every number of a real sample replaced by a huge, negative or non-finite one."""
    name, text = sample
    check(parser_for(name), re.sub(r"\b\d+\b", number, text, count=3))
