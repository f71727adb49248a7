"""Real processes with hostile names, for the tests that hold that names stay text.

Each process chooses its own names, as an attacker on a shared node can: ``argv[0]`` (what
``exec -a`` sets) holding every terminal attack the issue lists, a ``comm`` (what ``prctl``'s
PR_SET_NAME sets, written through ``/proc/self/comm``) holding escapes and a raw C1 byte, an
``argv[0]`` with a newline that spells a forged CSV row, one with bytes that are not UTF-8, one
with a comma and a double quote, and one ordinary ``sleep`` whose output must not change.
Started by :class:`Hostiles`, stopped by PID when it exits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ESC = "\x1b"
BEL = "\x07"
TITLE = f"{ESC}]0;pwned{BEL}"  # sets the window title
CLEAR = f"{ESC}[2J"  # clears the screen
CLIPBOARD = f"{ESC}]52;c;ZXZpbA=={BEL}"  # writes the clipboard
LINK = f"{ESC}]8;;http://evil.example/{ESC}\\click{ESC}]8;;{ESC}\\"  # a hidden link
REPORT = f"{ESC}[6n"  # makes the terminal type a cursor report
C1 = "\u009b31m"  # CSI as one C1 character
RTL = "\u202e"  # right-to-left override
MARKUP = "[@click=app.quit]quit[/]"  # Textual markup: must stay text
# No space: nvidia-smi's process_name is argv[0], gputop's the command up to its first space.
ARGV0 = f"/opt/{TITLE}{CLEAR}{CLIPBOARD}{LINK}{REPORT}{BEL}{C1}{RTL}gpj.exe{MARKUP}"
COMM = b"\x1b[2J\x9b\x07\xe2\x80\xaeX"  # 10 bytes: ESC, a raw C1 byte, BEL, RTL override
FORGED_ROW = "31337,/usr/bin/forged,99999, 1024 MiB"
NEWLINE_ARGV0 = f"/usr/bin/x\n{FORGED_ROW}"
BAD_UTF8_ARGV0 = b"BAD\xff\xfe"
COMMA_ARGV0 = '/opt/a,b"c'

# Every raw sequence above, none of which may reach a terminal, a CSV row or a label.
RAW = (ESC, BEL, "\x9b", "\u009b", RTL, "\n" + FORGED_ROW)
_SET_COMM = (f"import time; open('/proc/self/comm', 'wb').write({COMM!r}); "
             "time.sleep(3600)")


class Hostiles:
    """The hostile processes and one ordinary one; ``pids`` by kind."""

    def __init__(self) -> None:
        self._procs: list[subprocess.Popen] = []
        self.pids: dict[str, int] = {}

    def _start(self, kind: str, args: list, executable) -> None:
        proc = subprocess.Popen(args, executable=executable, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._procs.append(proc)
        self.pids[kind] = proc.pid

    def __enter__(self) -> Hostiles:
        try:
            self._start("escapes", [ARGV0, "-c", _SET_COMM], sys.executable)
            self._start("newline", [NEWLINE_ARGV0, "3600"], "/bin/sleep")
            self._start("bad-utf8", [BAD_UTF8_ARGV0, b"3600"], b"/bin/sleep")
            self._start("comma", [COMMA_ARGV0, "3600"], "/bin/sleep")
            self._start("plain", ["sleep", "3600"], "/bin/sleep")
            self._wait_for_comm()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _wait_for_comm(self, timeout: float = 10.0) -> None:
        comm = Path(f"/proc/{self.pids['escapes']}/comm")
        deadline = time.monotonic() + timeout
        while comm.read_bytes().rstrip(b"\n") != COMM:
            if time.monotonic() > deadline:
                raise TimeoutError("the hostile process never set its comm")
            time.sleep(0.02)

    def __exit__(self, *exc: object) -> None:
        for proc in self._procs:
            try:
                os.kill(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for proc in self._procs:
            proc.wait()

    def nvml_config(self, path: Path) -> Path:
        """A fake NVML node (tests/support/cfake.py) of one GPU running every one of them, 1 GiB each."""
        path.write_text("gpu_count=1\ngpu.0.procs=" +
                        ",".join(f"{pid}:1G" for pid in self.pids.values()) + "\n")
        return path


def inert(text: str) -> bool:
    """True when ``text`` has nothing a terminal acts on: every line printable."""
    return all(line.isprintable() for line in text.split("\n"))
