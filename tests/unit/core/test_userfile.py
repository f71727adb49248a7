"""The one reader of files a user names: every way a path can be wrong is one line, at once."""

from __future__ import annotations

import os
import time

import pytest

from gputop.core import userfile
from gputop.core.userfile import FileProblem


def test_a_fifo_is_refused_at_once_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "theme.toml"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(FileProblem, match=r"not a regular file \(a FIFO\)"):
        userfile.read_text(fifo)
    assert time.monotonic() - started < 1


def test_dev_zero_is_refused_without_reading_it_whole():
    with pytest.raises(FileProblem, match=r"not a regular file \(a device\)"):
        userfile.read_bytes("/dev/zero")


def test_a_folder_is_named_as_one(tmp_path):
    with pytest.raises(FileProblem, match=r"not a regular file \(a folder\)"):
        userfile.read_text(tmp_path)


def test_a_missing_file_is_left_to_the_caller(tmp_path):
    with pytest.raises(FileNotFoundError):
        userfile.read_text(tmp_path / "absent.toml")


def test_a_file_over_the_limit_is_refused(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 4097)
    with pytest.raises(FileProblem, match="larger than 4 KiB"):
        userfile.read_bytes(big, limit=4096)
    assert userfile.read_bytes(big, limit=4097) == b" " * 4097


def test_bytes_that_are_not_utf8_are_located(tmp_path):
    bad = tmp_path / "hosts.toml"
    bad.write_bytes(b"name = 'a'\n\xff\xfe")
    with pytest.raises(FileProblem, match=r"not UTF-8 text \(byte 0xff at offset 11\)"):
        userfile.read_text(bad)


def test_a_nul_byte_is_refused(tmp_path):
    bad = tmp_path / "a.toml"
    bad.write_bytes(b"a = 1\x00")
    with pytest.raises(FileProblem, match="NUL byte at offset 5"):
        userfile.read_text(bad)


@pytest.mark.parametrize("text", ["[" * 100000 + "]" * 100000, "[" * 70 + "]" * 70,
                                  '{"a":' * 5000 + "1" + "}" * 5000])
def test_deep_json_is_one_line_not_a_recursion_error(text):
    with pytest.raises(FileProblem, match="nested deeper than 64 levels"):
        userfile.load_json(text)


@pytest.mark.parametrize("text", ["a = " + "[" * 100000 + "]" * 100000,
                                  "a = " + "[" * 70 + "]" * 70])
def test_deep_toml_is_one_line_not_a_recursion_error(text):
    with pytest.raises(FileProblem, match="nested deeper than 64 levels"):
        userfile.load_toml(text)


def test_a_document_at_the_depth_limit_is_read():
    assert userfile.depth(userfile.load_json("[" * 64 + "]" * 64)) == 64


def test_parser_errors_are_one_line():
    with pytest.raises(FileProblem) as caught:
        userfile.load_json('{"a":\n\x1b[2J')
    assert "\n" not in str(caught.value) and "\x1b" not in str(caught.value)
    assert str(caught.value).startswith("not valid JSON: ")


def test_nan_is_not_json():
    with pytest.raises(FileProblem, match="not valid JSON"):
        userfile.load_json('{"a": NaN}')


def test_a_key_given_twice_is_refused(tmp_path):
    with pytest.raises(FileProblem, match="the key 'a' appears twice in one object"):
        userfile.load_json('{"b": {"a": 1, "a": 2}}')


def test_a_stream_is_refused_before_it_is_read(tmp_path):
    fifo = tmp_path / "log.csv"
    os.mkfifo(fifo)
    with pytest.raises(FileProblem, match=r"not a regular file \(a FIFO\)"):
        userfile.open_regular(fifo)
    log = tmp_path / "big.csv"
    log.write_bytes(b"x" * (userfile.MAX_BYTES + 10))
    with userfile.open_regular(log) as fh:  # no limit: a stream reads what it needs
        assert len(fh.read()) == userfile.MAX_BYTES + 10


def test_an_atomic_write_replaces_the_file_whole(tmp_path):
    path = tmp_path / "state.json"
    path.write_text("old")
    userfile.write_atomic(path, "new")
    assert path.read_text() == "new" and sorted(tmp_path.iterdir()) == [path]


def test_an_atomic_write_where_it_cannot_leaves_everything_as_it_was(tmp_path):
    with pytest.raises(FileProblem, match="cannot write in its folder: No such file"):
        userfile.write_atomic(tmp_path / "gone" / "state.json", "new")
    folder = tmp_path / "state.json"
    folder.mkdir()  # a folder where the file belongs: the rename fails, the copy is removed
    with pytest.raises(FileProblem, match="cannot write it: Is a directory"):
        userfile.write_atomic(folder, "new")
    assert sorted(tmp_path.iterdir()) == [folder] and list(folder.iterdir()) == []


def test_shared_and_self_holding_containers_are_measured_at_once():
    """YAML aliases: nine levels of ten references each (a 'billion laughs') and a list that
    holds itself."""
    import yaml

    laughs = "a0: &a0 [x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10))
    started = time.monotonic()
    assert userfile.depth(yaml.safe_load(laughs)) == 11
    looped = yaml.safe_load("&a [*a]")
    with pytest.raises(FileProblem, match="nested deeper"):
        userfile.shallow(looped)
    assert time.monotonic() - started < 1
