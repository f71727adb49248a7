"""`gputop [backend options] nvidia-smi [ARGS]`, and gputop run through a link named nvidia-smi.

Answers as nvidia-smi does, from any backend: the table, `-L`, `-q [-d TYPES] [-i IDS]`,
`-q -x`, each once or every `-l SEC`/`-lms MS` until Ctrl-C, SIGTERM or SIGHUP (exit 0, the
report being written finished first); `--query-gpu`/`--query-compute-apps` go to query mode.
What nvidia-smi would refuse is refused in its words, on standard output, with its exit code
(2 a bad argument, 6 no such device, 255 an unknown option or a file that cannot be written; 3
for what gputop does not do: settings, subcommands). Where no device answers, nvidia-smi's code
for the reason (9 driver not loaded, 12 no NVML, …), never simulated output.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from typing import TextIO

from gputop.config.options import SourceConfig

HELP = """\
gputop's nvidia-smi: nvidia-smi's read-only faces, answered from gputop's backend.

    nvidia-smi                      the table (GPUs, MIG devices, processes)
    nvidia-smi -L                   one line per GPU and MIG device
    nvidia-smi -q [-d TYPES]        every GPU's details; -d keeps some sections:
{types}
    nvidia-smi -q -x                the same as XML
    nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits]
    nvidia-smi --query-compute-apps=FIELDS --format=csv[,noheader][,nounits]
    nvidia-smi --help-query-gpu | --help-query-compute-apps | --version

    [plus any of]
    -i, --id=IDS                    indices, UUIDs or PCI bus ids, comma separated
    -f, --filename=FILE             write to FILE instead of standard output
    -l, --loop[=SEC]                report every SEC seconds (5 if none) until Ctrl+C
    -lms, --loop-ms=MS              report every MS milliseconds until Ctrl+C

Settings (-pm, -pl, -c, -mig, …) and subcommands (dmon, pmon, topo, …) are not answered:
exit code 3. See docs/nvidia-smi.md.
"""


def main(argv: Sequence[str], source: SourceConfig, gputop_argv: Sequence[str] = ()) -> int:
    """Answer ``argv`` (nvidia-smi's arguments) from ``source``; ``gputop_argv``: the gputop
    options before `nvidia-smi`, handed on to query mode."""
    from gputop.commands import query
    from gputop.commands.common import is_query
    from gputop.smi.request import DISPLAY, SmiRefusal, parse

    if is_query(argv):
        return query.main([*gputop_argv, *argv])
    try:
        request = parse(argv)
    except SmiRefusal as refusal:
        sys.stdout.write(refusal.text)
        sys.stdout.flush()
        return refusal.exit_code
    if request.face == "help":
        import textwrap

        indent = " " * 36
        types = textwrap.fill(", ".join(DISPLAY), width=92, initial_indent=indent,
                              subsequent_indent=indent)
        sys.stdout.write(HELP.format(types=types))
        return 0
    return Session(request, source).run()


class _Stop(BaseException):
    """Raised by a signal handler to leave a wait; never while a report is being written."""


class Session:
    """One invocation against an open backend: once, or every interval until a stop signal."""

    def __init__(self, request, source: SourceConfig) -> None:
        self.request = request
        self.source = source
        self.stop_signal: int | None = None
        self._writing = False

    def run(self) -> int:
        from gputop.backends import open_backend
        from gputop.backends.base import CAP_PROCESSES
        from gputop.core.errors import UsageError
        from gputop.core.selection import select_devices

        backend = open_backend(self.source.backend, self.source.options, one_vendor=True)
        try:
            info = backend.info()
            try:
                devices = select_devices(self.request.ids, info.devices)
            except UsageError:
                sys.stdout.write("No devices were found\n")
                return 6
            if self.request.face == "version":
                return self._version(info)
            out = self._open_output()
            if out is None:
                return 255
            try:
                self._reports(backend, devices, len(info.devices),
                              CAP_PROCESSES in backend.capabilities, out)
            finally:
                if out is not sys.stdout:
                    out.close()
        finally:
            backend.close()
        return 0

    def _version(self, info) -> int:
        from gputop.smi import layouts

        driver = info.driver_version or "N/A"
        nvml = ".".join(driver.split(".")[:2]) if info.driver_version else "N/A"
        version = layouts.generation(info.driver_version, [d.vendor for d in info.devices])
        sys.stdout.write(f"NVIDIA-SMI version  : {version}\nNVML version        : {nvml}\n"
                         f"DRIVER version      : {driver}\n"
                         f"CUDA Version        : {info.cuda_version or 'N/A'}\n")
        return 0

    def _open_output(self) -> TextIO | None:
        if self.request.filename is None:
            return sys.stdout
        try:
            return open(self.request.filename, "w", encoding="utf-8")  # noqa: SIM115
        except OSError:
            sys.stdout.write(f"Failed to create log file {self.request.filename}\n\n")
            return None

    def _on_signal(self, signum, frame) -> None:
        self.stop_signal = signum
        if not self._writing:
            raise _Stop

    def _reports(self, backend, devices, count: int, processes_known: bool, out: TextIO) -> None:
        from gputop.core.stop_signals import catch, release
        from gputop.sampler import next_tick
        from gputop.smi.faces import Node, answer

        interval = self.request.interval
        clock = backend.clock
        previous = catch(self._on_signal) if interval is not None else {}
        stopping = threading.Event()
        try:
            start, k = clock.monotonic(), 0
            while self.stop_signal is None:
                snap = backend.sample(devices)
                text = answer(self.request, Node(snap, count, processes_known))
                self._writing = True
                try:
                    out.write(text)
                    out.flush()
                finally:
                    self._writing = False
                if interval is None or self.stop_signal is not None:
                    break
                k, _ = next_tick(start, interval, clock.monotonic(), k)
                clock.wait(stopping, start + k * interval - clock.monotonic())
        except _Stop:
            pass
        finally:
            release(previous)


__all__ = ["HELP", "Session", "main"]
