"""The Prometheus text format (0.0.4), written from prometheus-client's metric families.

prometheus-client's own writer renames every counter to ``NAME_total``; dcgm-exporter's
counters (``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION``, …) carry no suffix, and dashboards query
them by that name, so names are written exactly as given.

Label values name what processes, users, containers and jobs chose (``name``, ``user``, ``pod``,
``container``): the format escapes a backslash, a double quote and a newline, and passes
anything else through to Prometheus, its API, Grafana and every terminal a query is printed
in. Every label value is first made visible (``gputop.core.visible``: ESC as ``^[``, a newline as
``^J``, a C1 control or a bidirectional override as ``\x9b``, ``\u202e``), so no control
character leaves the exporter, then escaped as the format requires."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import Metric
from prometheus_client.utils import floatToGoString

from gputop.core.visible import visible

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _escape_help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


def _escape_value(text: str) -> str:
    return visible(text).replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')


def render(families: Iterable[Metric]) -> bytes:
    out: list[str] = []
    for family in families:
        if not family.samples:
            continue  # a family no device reports is left out whole, as dcgm-exporter does
        out.append(f"# HELP {family.name} {_escape_help(family.documentation)}\n")
        out.append(f"# TYPE {family.name} {family.type}\n")
        for s in family.samples:
            labels = ",".join(f'{k}="{_escape_value(v)}"' for k, v in s.labels.items())
            out.append(f"{s.name}{{{labels}}} {floatToGoString(s.value)}\n" if labels else
                       f"{s.name} {floatToGoString(s.value)}\n")
    return "".join(out).encode("utf-8")
