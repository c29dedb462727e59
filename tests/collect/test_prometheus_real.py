"""The Prometheus source against a real node_exporter 1.5 and a real Prometheus 2.42.

node_exporter reads a fixture sysfs (tests/collect/fixtures_prom/sys) whose IB and RAPL counters a
thread advances at known rates; Prometheus scrapes it every second; rush's collector queries
Prometheus and must find those rates.
"""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from rush.collect.base import get_collector
from rush.collect.prometheus import PrometheusClient, PrometheusCollector, PrometheusOptions
from rush.errors import CollectorError
from tests.collect.fixtures_prom import IB_PORT, Rates, Stack, free_port, running_stack, tools_available

pytestmark = pytest.mark.skipif(
    not tools_available(), reason="prometheus / prometheus-node-exporter not installed"
)

RATES = Rates()
EXPECTED = {
    "ib_xmit_bytes_per_s": 4 * RATES.xmit_words_per_s,  # node_exporter multiplies words by 4
    "ib_rcv_bytes_per_s": 4 * RATES.rcv_words_per_s,
    "ib_xmit_packets_per_s": RATES.xmit_packets_per_s,
    "ib_rcv_packets_per_s": 0.0,  # fixture does not move it
    "rapl_package_watts": RATES.package_uj_per_s / 1e6,
    "rapl_dram_watts": RATES.dram_uj_per_s / 1e6,
}
TOLERANCE = 0.10
# rate() divides by the whole range; a 1m range over the few seconds of data a test has would
# under-read, so the tests use a 5s window that is fully covered by 1 s scrapes.
WINDOW = "5s"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    # 10 scrapes: every 5 s window the tests query lies after the first scrape.
    with running_stack(tmp_path_factory.mktemp("prom"), RATES, scrapes=10) as running:
        yield running


def _close(actual: float, expected: float) -> bool:
    if expected == 0:
        return abs(actual) < 1e-9
    return abs(actual - expected) <= TOLERANCE * expected


def test_node_exporter_reports_ib_data_in_bytes(stack: Stack) -> None:
    words = int((stack.sysfs / IB_PORT / "port_xmit_data").read_text())
    text = requests.get(f"http://{stack.exporter}/metrics", timeout=5).text
    value = next(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "node_infiniband_port_data_transmitted_bytes_total"
    )
    # The counter only grows between the file read above and the scrape; it is 4x the words.
    assert value >= 4 * words
    assert value < 4 * (words + RATES.xmit_words_per_s * 5)


def test_rate_mode_returns_expected_rates(stack: Stack) -> None:
    collector = get_collector("prometheus", url=stack.url, rate_window=WINDOW)
    assert isinstance(collector, PrometheusCollector)
    samples = collector.collect()
    by_metric = {s.metric: s for s in samples}
    assert set(by_metric) == set(EXPECTED)
    for metric, expected in EXPECTED.items():
        sample = by_metric[metric]
        assert sample.host == "127.0.0.1"  # instance label, port stripped
        assert sample.source == "prometheus"
        assert _close(sample.value, expected), (metric, sample.value, expected)
        assert abs(sample.timestamp - time.time()) < 10


def test_query_range_returns_a_series(stack: Stack) -> None:
    collector = PrometheusCollector(
        PrometheusOptions(
            stack.url, metrics=["ib_xmit_bytes_per_s", "rapl_package_watts"], rate_window=WINDOW
        )
    )
    end = time.time() - 1
    samples = collector.collect_range(end - 2, end, step=1.0)
    for metric in ("ib_xmit_bytes_per_s", "rapl_package_watts"):
        points = [s for s in samples if s.metric == metric]
        assert len(points) == 3
        assert all(_close(s.value, EXPECTED[metric]) for s in points), [s.value for s in points]
        assert [s.timestamp for s in points] == sorted(s.timestamp for s in points)


def test_raw_mode_computes_rates_from_counters(stack: Stack) -> None:
    collector = PrometheusCollector(
        PrometheusOptions(stack.url, mode="raw", host_label="instance", strip_port=False)
    )
    assert collector.collect() == []  # first call primes the rate tracker
    time.sleep(3.2)
    samples = collector.collect()
    by_metric = {s.metric: s for s in samples}
    assert set(by_metric) == set(EXPECTED)
    for metric, expected in EXPECTED.items():
        assert by_metric[metric].host == stack.exporter
        assert _close(by_metric[metric].value, expected), (metric, by_metric[metric].value, expected)


def test_selector_narrows_series(stack: Stack) -> None:
    none = PrometheusCollector(
        PrometheusOptions(stack.url, selector='job="absent"', rate_window=WINDOW)
    ).collect()
    assert none == []
    some = PrometheusCollector(
        PrometheusOptions(stack.url, selector='job="node"', rate_window=WINDOW)
    ).collect()
    assert {s.metric for s in some} == set(EXPECTED)


# ------------------------------------------------------------------------------- errors


def test_connection_refused_names_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(CollectorError) as info:
        PrometheusCollector(PrometheusOptions(url)).collect()
    assert info.value.where == f"{url}/api/v1/query"
    assert "cannot connect" in info.value.message
    assert url in (info.value.fix or "")


def test_bad_promql_is_http_400_from_real_prometheus(stack: Stack) -> None:
    client = PrometheusClient(stack.url)
    with pytest.raises(CollectorError) as info:
        client.query("rate(node_rapl_package_joules_total[")
    assert "HTTP 400" in info.value.message
    assert "bad_data" in info.value.message
    assert info.value.where == f"{stack.url}/api/v1/query"


def test_non_api_endpoint_is_rejected(stack: Stack) -> None:
    # node_exporter is not a Prometheus server: its answer is not the API's JSON.
    with pytest.raises(CollectorError) as info:
        PrometheusCollector(PrometheusOptions(f"http://{stack.exporter}")).collect()
    assert info.value.where is not None and stack.exporter in info.value.where


class _Canned(http.server.BaseHTTPRequestHandler):
    """Answers every GET with a fixed status and body (bodies as Prometheus would send them)."""

    status = 200
    body = b""

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (
            200,
            b'{"status":"error","errorType":"execution","error":"query timed out"}',
            "execution: query timed out",
        ),
        (503, b'{"status":"error","errorType":"unavailable","error":"TSDB not ready"}', "HTTP 503"),
        (500, b"internal error", "HTTP 500"),
        (200, b"{not json", "not a JSON object"),
        (
            200,
            b'{"status":"success","data":{"resultType":"string","result":[1,"x"]}}',
            "cannot use resultType 'string'",
        ),
    ],
)
def test_error_answers(status: int, body: bytes, expected: str) -> None:
    # A canned HTTP server (not Prometheus) to produce answers a healthy Prometheus will not.
    handler = type("Handler", (_Canned,), {"status": status, "body": body})
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        with pytest.raises(CollectorError, match=expected) as info:
            PrometheusCollector(PrometheusOptions(url)).collect()
        assert info.value.where == f"{url}/api/v1/query"
        assert info.value.fix
    finally:
        server.shutdown()
        server.server_close()


def test_bad_options() -> None:
    with pytest.raises(CollectorError, match="unknown metric"):
        PrometheusCollector(PrometheusOptions("http://x", metrics=["ib_bogus"]))
    with pytest.raises(CollectorError, match="unknown mode"):
        PrometheusCollector(PrometheusOptions("http://x", mode="fast"))
