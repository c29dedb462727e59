"""The daemon's Prometheus metrics (prometheus-client), served on localhost by default.

Names (``deploy/prometheus/rush-alerts.yml`` and ``deploy/grafana/rush-dashboard.json``
use them; a test checks that every name they use is exported here):

=================================================  =========  ==========================
rush_cycle_duration_seconds                        histogram  one good cycle, end to end
rush_cycles_total{outcome}                         counter    ok, rjms_error, error
rush_queue_length                                  gauge      pending jobs in the last read
rush_running_jobs                                  gauge      running jobs in the last read
rush_decisions_total{kind,outcome}                 counter    kind: priority, hold, skip,
                                                              release, kill; outcome: done,
                                                              failed, dry-run, refused, ...
rush_rjms_errors_total                             counter    failed or stale queue reads
rush_consecutive_failures                          gauge      failed cycles in a row
rush_model_latency_seconds{model}                  histogram  prediction time per cycle
rush_model_errors_total{model}                     counter    unusable model files/inputs
rush_model_info{model,version}                     gauge      1 per model in use
rush_last_successful_cycle_timestamp_seconds       gauge      unix time
rush_dry_run                                       gauge      1 in dry-run, 0 when applying
=================================================  =========  ==========================
"""

from __future__ import annotations

import errno
import socket
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from rush.config_file import split_host_port
from rush.errors import ConfigError


def _bind_fix(exc: BaseException, host: str, port: int, key: str) -> str:
    """What to change in ``key`` for this bind failure."""
    if isinstance(exc, socket.gaierror | UnicodeError):
        return f"{key}: {host!r} does not resolve here; use an IP address such as 127.0.0.1"
    code = getattr(exc, "errno", None)
    if code == errno.EADDRINUSE:
        return f"another process listens on port {port}: set a free port in {key} (0 picks one)"
    if code == errno.EADDRNOTAVAIL or code == errno.EAFNOSUPPORT:
        return (
            f"{host} is not an address of this host (an IPv6 address without IPv6?): "
            f"set {key} to an address it has, e.g. 127.0.0.1:{port}"
        )
    if code == errno.EACCES:
        return f"ports below 1024 need privileges: set {key} to a port >= 1024"
    return f"set {key} to a HOST:PORT this host can listen on, e.g. 127.0.0.1:{port}"


def serve_metrics(address: str, registry: CollectorRegistry, key: str) -> tuple[Any, int]:
    """Serve ``registry`` on ``HOST:PORT`` (``[IPv6]:PORT``); returns (server or None, bound port).

    Every bind failure (port in use, an address the host lacks, a name that does not resolve)
    is a ConfigError naming ``key``, so the CLI exits 2 and systemd does not restart-loop.
    """
    try:
        host, port = split_host_port(address)
    except ValueError as exc:
        raise ConfigError(str(exc), where=key, fix="write HOST:PORT, e.g. 127.0.0.1:9877") from None
    try:
        result = start_http_server(port, addr=host, registry=registry)
    except (OSError, UnicodeError, ValueError, OverflowError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or exc.__class__.__name__
        raise ConfigError(
            f"cannot serve metrics on {address}: {reason}", where=key, fix=_bind_fix(exc, host, port, key)
        ) from None
    # prometheus-client >= 0.20 returns (server, thread); older versions return None.
    server = result[0] if isinstance(result, tuple) and result else None
    if server is not None:
        return server, int(server.server_port)
    if port == 0:
        raise ConfigError(
            "this prometheus-client does not tell which port it picked for port 0",
            where=key,
            fix="pip install 'prometheus-client>=0.20', or set a fixed port",
        )
    return None, port


class DaemonMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.cycle_seconds = Histogram(
            "rush_cycle_duration_seconds",
            "Duration of one successful daemon cycle",
            registry=r,
            buckets=(0.01, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60),
        )
        self.cycles = Counter("rush_cycles", "Daemon cycles by outcome", ["outcome"], registry=r)
        self.queue_length = Gauge("rush_queue_length", "Pending jobs seen in the last cycle", registry=r)
        self.running_jobs = Gauge("rush_running_jobs", "Running jobs seen in the last cycle", registry=r)
        self.decisions = Counter(
            "rush_decisions", "Decisions by kind and outcome", ["kind", "outcome"], registry=r
        )
        self.rjms_errors = Counter("rush_rjms_errors", "Failed or stale reads of the RJMS", registry=r)
        self.consecutive_failures = Gauge(
            "rush_consecutive_failures", "Failed cycles in a row (0 after a good one)", registry=r
        )
        self.model_latency = Histogram(
            "rush_model_latency_seconds",
            "Model prediction time per cycle",
            ["model"],
            registry=r,
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5),
        )
        self.model_errors = Counter(
            "rush_model_errors", "Model files or inputs that could not be used", ["model"], registry=r
        )
        self.model_info = Gauge("rush_model_info", "Model in use (value 1)", ["model", "version"], registry=r)
        self.last_success = Gauge(
            "rush_last_successful_cycle_timestamp_seconds", "Unix time of the last good cycle", registry=r
        )
        self.dry_run = Gauge("rush_dry_run", "1 when only journaling, 0 when applying", registry=r)
        for outcome in ("ok", "rjms_error", "error"):
            self.cycles.labels(outcome=outcome)  # export zeros so rate() works from the start

    def serve(self, address: str) -> int:
        """Serve /metrics on ``HOST:PORT``; returns the port (0 picks a free one)."""
        self.server, port = serve_metrics(address, self.registry, "daemon.metrics_address")
        return port

    def shutdown(self) -> None:
        server = getattr(self, "server", None)
        if server is not None:
            server.shutdown()
            server.server_close()
