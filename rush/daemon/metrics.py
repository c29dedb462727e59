"""The daemon's Prometheus metrics (prometheus-client), served on localhost by default."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server


class DaemonMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.cycle_seconds = Histogram(
            "rush_cycle_duration_seconds",
            "Duration of one daemon cycle",
            registry=r,
            buckets=(0.01, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30),
        )
        self.queue_length = Gauge("rush_queue_length", "Pending jobs seen in the last cycle", registry=r)
        self.decisions = Counter(
            "rush_decisions", "Decisions by kind and outcome", ["kind", "outcome"], registry=r
        )
        self.rjms_errors = Counter("rush_rjms_errors", "Failed reads of the RJMS", registry=r)
        self.model_latency = Histogram(
            "rush_model_latency_seconds",
            "Model prediction time per cycle",
            registry=r,
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1),
        )
        self.model_errors = Counter(
            "rush_model_errors", "Models that could not be loaded or used", registry=r
        )
        self.model_info = Gauge("rush_model_info", "Model in use (value 1)", ["model", "version"], registry=r)
        self.last_success = Gauge(
            "rush_last_successful_cycle_timestamp_seconds", "Unix time of the last good cycle", registry=r
        )

    def serve(self, address: str) -> int:
        host, _, port = address.rpartition(":")
        server, _thread = start_http_server(int(port), addr=host or "127.0.0.1", registry=self.registry)
        return server.server_port
