"""`gputop exporter [--listen ADDR:PORT]`: serve this node's snapshots to Prometheus.

A consumer like the agent: the sampler reads the device once per interval, and every scrape is
answered from its latest snapshot. Nothing heavy is imported until the command runs, and
Textual never.
"""

from __future__ import annotations

import argparse
import sys
import threading
from dataclasses import dataclass

from gputop.commands.common import bounded, source_config
from gputop.config.options import SourceConfig
from gputop.core import bounds

DEFAULT_LISTEN = ":9400"  # dcgm-exporter's port: a node runs one or the other


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--listen", default=DEFAULT_LISTEN, metavar="ADDR:PORT",
                        help="where to serve /metrics and /health (default: :9400, every address)")
    parser.add_argument("--web-config", metavar="FILE",
                        help="TLS and basic auth, in the Prometheus exporter-toolkit web-config "
                             "format")
    parser.add_argument("--hostname-label", choices=("both", "Hostname", "hostname"),
                        default="both",
                        help="the node label(s): dcgm-exporter's older Hostname, its newer "
                             "hostname, or both (default)")
    parser.add_argument("--top-processes", type=bounded(bounds.EXPORTER_TOP_PROCESSES),
                        default=None, metavar="N",
                        help="per-process series for the N processes holding the most memory "
                             f"on each GPU (default: 10; {bounds.EXPORTER_TOP_PROCESSES.describe()})")


@dataclass(frozen=True)
class ExporterConfig:
    source: SourceConfig
    listen: str = DEFAULT_LISTEN  # ADDR:PORT as given
    web_config: str | None = None  # the exporter-toolkit web-config file
    hostname_label: str = "both"  # both, Hostname or hostname
    top_processes: int | None = None  # None: gputop.exporter.own.DEFAULT_TOP_PROCESSES


def configure(args: argparse.Namespace) -> ExporterConfig:
    return ExporterConfig(source=source_config(args), listen=args.listen,
                          web_config=args.web_config, hostname_label=args.hostname_label,
                          top_processes=args.top_processes)


def run(config: ExporterConfig) -> int:
    from gputop import __version__
    from gputop.analysis.pipeline import default_analyzer
    from gputop.backends import open_backend
    from gputop.config.options import parse_listen
    from gputop.core import stop_signals
    from gputop.core.errors import GputopError
    from gputop.core.selection import select_devices
    from gputop.exporter import labels, own, server, webconfig
    from gputop.sampler import Sampler

    host, port = parse_listen(config.listen)
    top = own.DEFAULT_TOP_PROCESSES if config.top_processes is None else config.top_processes
    web = webconfig.load(config.web_config) if config.web_config else webconfig.WebConfig()
    opts = own.Options(hostname_labels=labels.HOSTNAME_LABELS[config.hostname_label],
                       top_processes=top)
    source = config.source
    backend = open_backend(source.backend, source.options)
    try:
        devices = select_devices(source.ids, backend.info().devices)
        latest = server.Latest(opts, __version__)
        sampler = Sampler(backend, interval=source.interval, devices=devices,
                          analyze=default_analyzer())
        sampler.subscribe(latest.publish, latest.failed)
        try:
            httpd = server.serve(host, port, latest, web,
                                 stale_after=max(3 * source.interval, 5.0))
        except OSError as exc:
            raise GputopError(f"exporter: cannot listen on {config.listen}: "
                              f"{exc.strerror or exc}") from None
        stopped = threading.Event()

        def stop(signum: int, frame: object) -> None:
            stopped.set()
            threading.Thread(target=httpd.shutdown, daemon=True).start()

        previous = stop_signals.catch(stop)
        bound_host, bound_port = httpd.server_address[:2]
        scheme = "https" if web.tls is not None else "http"
        print(f"gputop exporter: {scheme}://{host or '0.0.0.0'}:{bound_port}/metrics "
              f"(backend {backend.name})", file=sys.stderr, flush=True)
        sampler.start()
        try:
            httpd.serve_forever(poll_interval=0.5)
        finally:
            stop_signals.release(previous)
            sampler.stop()
            httpd.server_close()
    finally:
        backend.close()
    return 0
