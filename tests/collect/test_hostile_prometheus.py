"""Hostile answers from a Prometheus URL: garbage, NaN, far-future points, wrong layouts.

A real HTTP server on 127.0.0.1 answers each query with the case's status and body (a real
Prometheus cannot be made to send these; the wire format is the HTTP API v1's). The client
must turn each into series of finite, present-time points or a CollectorError naming the URL.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator

import pytest

from rush.collect.prometheus import PrometheusClient, PrometheusCollector, PrometheusOptions
from rush.errors import CollectorError

NOW = time.time()


class Answers(http.server.BaseHTTPRequestHandler):
    answer: tuple[int, bytes] = (200, b"")

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        status, body = type(self).answer
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def vector(*points: tuple[object, object], metric: object = None) -> bytes:
    result = [
        {"metric": metric if metric is not None else {"instance": "n1:9100"}, "value": list(p)}
        for p in points
    ]
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()


# (id, status, body, expected points kept, or the error text)
CASES: list[tuple[str, int, bytes, int | str]] = [
    ("plain", 200, vector((NOW, "12.5")), 1),
    ("nan-value", 200, vector((NOW, "NaN")), 0),
    ("inf-value", 200, vector((NOW, "+Inf")), 0),
    ("1e400-value", 200, vector((NOW, "1e400")), 0),
    ("nan-time", 200, vector(("NaN", "1")), 0),
    ("far-future-time", 200, vector((NOW + 10**9, "1")), 0),
    ("text-value", 200, vector((NOW, "abc")), "unexpected answer layout"),
    ("three-element-point", 200, vector((NOW, "1", "2")), "unexpected answer layout"),
    ("metric-not-object", 200, vector((NOW, "1"), metric=5), "unexpected answer layout"),
    (
        "result-not-list",
        200,
        b'{"status":"success","data":{"resultType":"vector","result":5}}',
        "unexpected answer",
    ),
    ("data-missing", 200, b'{"status":"success"}', "unexpected answer layout"),
    ("string-result", 200, b'{"status":"success","data":{"resultType":"string","result":[]}}', 0),
    (
        "string-item",
        200,
        b'{"status":"success","data":{"resultType":"string","result":[{"value":[1,"a"]}]}}',
        "cannot use resultType",
    ),
    (
        "status-error",
        200,
        b'{"status":"error","errorType":"bad_data","error":"parse error"}',
        "status 'error'",
    ),
    ("html", 200, b"<html>login</html>", "answer is not a JSON object"),
    ("json-list", 200, b"[1, 2, 3]", "answer is not a JSON object"),
    ("empty-body", 200, b"", "answer is not a JSON object"),
    ("truncated-json", 200, vector((NOW, "1"))[:30], "answer is not a JSON object"),
    ("deep-nesting", 200, b"[" * 100_000 + b"]" * 100_000, "answer is not a JSON object"),
    ("not-utf8", 200, b"\xff\xfe\x00{", "answer is not a JSON object"),
    ("http-500-garbage", 500, b"\x00\x01", "HTTP 500"),
    ("http-400-error", 400, b'{"status":"error","errorType":"bad_data","error":"x"}', "HTTP 400: bad_data"),
]


@pytest.mark.parametrize(("status", "body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_prometheus_answer(server: str, status: int, body: bytes, expected: int | str):
    Answers.answer = (status, body)
    client = PrometheusClient(server, timeout=10)
    if isinstance(expected, str):
        with pytest.raises(CollectorError) as err:
            client.query("up")
        assert expected in str(err.value) and server in str(err.value)
        return
    series = client.query("up")
    points = [p for s in series for p in s.points]
    assert len(points) == expected
    assert all(t <= time.time() + 300 and t == t and abs(v) < float("inf") for t, v in points)


def test_raw_mode_ignores_a_future_point_and_keeps_counting(server: str):
    collector = PrometheusCollector(PrometheusOptions(server, mode="raw", metrics=["ib_xmit_bytes_per_s"]))

    def answer(t: float, v: float) -> tuple[int, bytes]:
        series = [{"metric": {"instance": "n1:9100"}, "values": [[t, str(v)]]}]
        return 200, json.dumps(
            {"status": "success", "data": {"resultType": "matrix", "result": series}}
        ).encode()

    Answers.answer = answer(NOW - 20, 1000)
    assert collector.collect() == []  # primes the tracker
    Answers.answer = answer(NOW + 10**9, 5000)
    assert collector.collect() == []  # the far-future point is dropped before the tracker
    Answers.answer = answer(NOW - 10, 2000)
    samples = collector.collect()
    assert [(s.host, s.value) for s in samples] == [("n1", pytest.approx(100.0))]
