"""The kernel's facts of one process for the process detail view, read without psutil: the same
values psutil gives for this process, the same words for every state, and no value made up for
what may not be read."""

from __future__ import annotations

import os

import psutil
import pytest
from psutil import _pslinux

from gputop.host import os_facts


def test_this_process_facts_are_psutils() -> None:
    ours, theirs = os_facts.read(os.getpid()), psutil.Process()
    assert ours.started == theirs.create_time()
    assert ours.status == theirs.status() == "running"  # it is reading them
    assert ours.threads == theirs.num_threads() and ours.parent == theirs.ppid()
    assert ours.nice == theirs.nice() and ours.cwd == theirs.cwd() == os.getcwd()


def test_every_state_letter_has_psutils_word() -> None:
    assert os_facts.STATES == _pslinux.PROC_STATUSES


def test_a_working_directory_not_ours_to_read_is_none_not_made_up(monkeypatch) -> None:
    def refused(path: str) -> str:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(os, "readlink", refused)
    facts = os_facts.read(os.getpid())
    assert facts.cwd is None and facts.threads >= 1  # the rest is still read


def test_no_such_process_raises_file_not_found() -> None:
    with pytest.raises(FileNotFoundError):
        os_facts.read(2**22 + 1)  # above the kernel's largest PID (pid_max's ceiling)
