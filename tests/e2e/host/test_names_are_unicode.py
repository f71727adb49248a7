"""The model holds valid Unicode: bytes that are not UTF-8 in a command line, a process name, a
user name (/etc/passwd), a pod or container name (the kubelet's log folders) or a Docker name
(its config file may spell a lone surrogate) become U+FFFD where gputop reads them, never the
lone surrogates Python keeps (``surrogateescape``), which JSON, CSV and the exporter cannot
encode. Control characters are kept: every output makes them visible."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from gputop.host.attribution import Attribution, Places
from gputop.host.processes import HostProcesses
from tests.support.kernel_lab import CRI_ID, DOCKER_ID, POD_UID


def test_a_command_line_and_a_comm_that_are_not_utf8_become_replacement_characters(lab):
    code = b"import time; open('/proc/self/comm', 'wb').write(b'\\x1bX\\xff'); time.sleep(60)"
    proc = lab.spawn([b"BAD\xff\xfe", b"-c", code], executable=sys.executable)
    deadline = time.monotonic() + 10
    while not Path(f"/proc/{proc.pid}/comm").read_bytes().startswith(b"\x1bX"):
        assert time.monotonic() < deadline, "the process never set its comm"
        time.sleep(0.01)
    facts = HostProcesses().lookup(proc.pid)
    assert facts.command.startswith("BAD\ufffd\ufffd -c import time")
    assert facts.name == "\x1bX\ufffd"  # the escape is kept (outputs show it), the byte is not


def test_pod_container_and_docker_names_that_are_not_utf8_become_replacement_characters(
        lab, tmp_path):
    pod = lab.spawn()
    lab.place(pod.pid, f"kubepods/burstable/pod{POD_UID}/{CRI_ID}")
    docker = lab.spawn()
    lab.place(docker.pid, f"system.slice/docker-{DOCKER_ID}.scope")
    pods, containers = tmp_path / "pods", tmp_path / "containers"
    pods.mkdir()
    containers.mkdir()
    os.mkdir(os.fsencode(pods) + b"/ns\xff_pod\xfe_" + POD_UID.encode())
    open(os.fsencode(containers) + b"/pod\xfe_ns\xff_ctr\x80-" + CRI_ID.encode() + b".log",
         "wb").close()
    config = tmp_path / "docker" / "containers" / DOCKER_ID / "config.v2.json"
    config.parent.mkdir(parents=True)
    config.write_text('{"Name": "/dock\\udcff\\u001b"}')  # JSON may spell a lone surrogate
    attribution = Attribution(Places(docker=str(tmp_path / "docker"), pod_logs=str(pods),
                                     container_logs=str(containers)))
    in_pod = attribution.owner(pod.pid).container
    assert (in_pod.pod_namespace, in_pod.pod, in_pod.name) == ("ns\ufffd", "pod\ufffd",
                                                              "ctr\ufffd")
    assert attribution.owner(docker.pid).container.name == "dock\ufffd\x1b"
