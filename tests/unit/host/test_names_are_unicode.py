"""The model holds valid Unicode: bytes that are not UTF-8 in a command line, a process name, a
user name (/etc/passwd), a pod or container name (the kubelet's log folders) or a Docker name
(its config file may spell a lone surrogate) become U+FFFD where gputop reads them, never the
lone surrogates Python keeps (``surrogateescape``), which JSON, CSV and the exporter cannot
encode. Control characters are kept: every output makes them visible."""

from __future__ import annotations

import os
import pwd
from types import SimpleNamespace

from gputop.host.processes import HostProcesses


def test_a_user_name_that_is_not_utf8_becomes_replacement_characters(monkeypatch):
    name = b"r\xf6ot".decode("utf-8", "surrogateescape")  # a Latin-1 passwd entry
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: SimpleNamespace(pw_name=name))
    assert HostProcesses().lookup(os.getpid()).user == "r\ufffdot"
