"""The call budget: what each consumer reads from a sample, so that a backend reads nothing else.

On a real driver every NVML call is an ioctl into the kernel driver (tens of µs, some far more,
and some take locks a training job's own NVML use contends for), so a tick should cost what the
running consumers show and no more. A consumer declares ``Wants``: the ``Device`` attributes it
reads, each with how often it needs a fresh value in seconds (0: every sample). Some attributes
name more than a value: ``processes`` (the process lists and per-process SM%), ``saturation``
(GPM), ``mig_instances`` (under MIG, the MIG devices and their memory; their processes and
GPM come with the other two) and ``LINK_RATES`` (the PCIe and NVLink rates within
``saturation``: GPM's where the GPU has GPM, else the driver's own link counters, which cost
calls of their own and so are read only for a view that shows them). A backend reads a value
only when a consumer wants it and its last reading is older than the shortest period asked for;
an attribute nobody wants is ``None`` in the snapshot, never a made-up or silently stale value. Identity and static facts (index, UUID, name,
PCI bus id, memory total, power-limit range, clock maxima) come with every device whatever is
asked.

``EVERYTHING`` (``None``) asks for every attribute on every sample: what ``snapshot --json``, the
agent, the advisor and an exporter read. It leaves out ``LINK_RATES``' counters: NVML's PCIe
throughput call waits out its 20 ms window (21 ms a call measured on an H200, driver 580.159.04),
two per GPU, so only a view that shows the rates pays for them; GPM's rates come with everything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

Wants = Mapping[str, float]
EVERYTHING: Wants | None = None
# The link rates of ``Device.saturation`` (pcie/nvlink tx/rx MiB/s), asked for apart from the rest
# of it: the wide cards and the saturation panel show them; the hints read GPM's SM figures only.
LINK_RATES = "link_rates"


def wants(*attrs: str, every: float = 0.0) -> dict[str, float]:
    """``attrs`` refreshed at least every ``every`` seconds (0: on every sample)."""
    return dict.fromkeys(attrs, float(every))


def merge(parts: Iterable[Wants | None]) -> Wants | None:
    """What a set of consumers reads together: every attribute any of them wants, at the
    shortest period any of them asks for. No consumer at all, or one that wants everything,
    is everything."""
    out: dict[str, float] = {}
    seen = False
    for part in parts:
        if part is None:
            return EVERYTHING
        seen = True
        for attr, every in part.items():
            old = out.get(attr)
            out[attr] = every if old is None else min(old, every)
    return out if seen else EVERYTHING


def wanted(w: Wants | None, attr: str) -> bool:
    return w is None or attr in w


def covers(have: Wants | None, need: Wants | None) -> bool:
    """Whether a sample read with ``have`` holds every attribute ``need`` asks for."""
    if have is None:
        return True
    return need is not None and all(attr in have for attr in need)
