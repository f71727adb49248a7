"""A bounded line splitter for untrusted streams: never holds more than ``max_line`` bytes.

A line longer than the cap is dropped as it streams past (its bytes are counted, not kept) and
reported once as an :class:`Oversize` item, so a 100 MB line costs the viewer no memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from gputop.core.units import MIB

DEFAULT_MAX_LINE = 8 * MIB  # a 16-GPU node with hundreds of processes is ~0.3 MB


@dataclass(frozen=True)
class Oversize:
    size: int  # bytes discarded, newline excluded


class LineSplitter:
    def __init__(self, max_line: int = DEFAULT_MAX_LINE) -> None:
        self.max_line = max_line
        self._buf = bytearray()
        self._discarding = 0  # >0: inside an oversized line, this many bytes dropped so far

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, chunk: bytes) -> list[bytes | Oversize]:
        out: list[bytes | Oversize] = []
        start = 0
        n = len(chunk)
        while start < n:
            nl = chunk.find(b"\n", start)
            end = n if nl < 0 else nl
            if self._discarding:
                self._discarding += end - start
                if nl >= 0:
                    out.append(Oversize(self._discarding))
                    self._discarding = 0
            elif len(self._buf) + (end - start) > self.max_line:
                self._discarding = len(self._buf) + (end - start)
                self._buf.clear()
                if nl >= 0:
                    out.append(Oversize(self._discarding))
                    self._discarding = 0
            else:
                self._buf += chunk[start:end]
                if nl >= 0:
                    out.append(bytes(self._buf))
                    self._buf.clear()
            if nl < 0:
                break
            start = nl + 1
        return out

    def close(self) -> list[bytes | Oversize]:
        """End of stream: a final unterminated line counts too."""
        if self._discarding:
            size, self._discarding = self._discarding, 0
            return [Oversize(size)]
        if self._buf:
            line = bytes(self._buf)
            self._buf.clear()
            return [line]
        return []
