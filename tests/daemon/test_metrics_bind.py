"""The metrics endpoint: a bind failure is a ConfigError naming the key and the fix (exit 2 from
the CLI, so systemd does not restart-loop), and prometheus-client's return value is handled
whether it is (server, thread) (>= 0.20) or None (0.19)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from prometheus_client import CollectorRegistry, Counter

from rush.collect import metrics_server as metrics_module
from rush.collect.config import collect_config_from_dict
from rush.collect.metrics_server import serve_metrics
from rush.collect.service import CollectorService
from rush.errors import ConfigError
from rush.planner.metrics import DaemonMetrics

KEY = "daemon.metrics_address"


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port another socket is listening on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def registry() -> CollectorRegistry:
    r = CollectorRegistry()
    Counter("rush_test_events", "a test counter", registry=r).inc(3)
    return r


def test_serves_and_reports_the_port() -> None:
    server, port = serve_metrics("127.0.0.1:0", registry(), KEY)
    try:
        assert port > 0
        assert (
            "rush_test_events_total 3.0" in requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        )
    finally:
        server.shutdown()
        server.server_close()


def test_ipv6_in_brackets_where_the_host_has_ipv6() -> None:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("this host has no IPv6 loopback (the no-IPv6 case is tested below)")
    metrics = DaemonMetrics()
    port = metrics.serve("[::1]:0")
    try:
        assert "rush_dry_run" in requests.get(f"http://[::1]:{port}/metrics", timeout=5).text
    finally:
        metrics.shutdown()


@pytest.mark.parametrize(
    ("address", "expected_fix"),
    [
        ("192.0.2.1:0", "not an address of this host"),  # TEST-NET-1: never local
        ("no-such-host.invalid:0", "does not resolve"),
        ("garbage", "HOST:PORT"),
        ("localhost:70000", "HOST:PORT"),
    ],
)
def test_bind_failures_are_config_errors(address: str, expected_fix: str) -> None:
    with pytest.raises(ConfigError) as info:
        serve_metrics(address, registry(), KEY)
    assert info.value.where == KEY and expected_fix in str(info.value)


def test_port_in_use(busy_port: int) -> None:
    with pytest.raises(ConfigError) as info:
        DaemonMetrics().serve(f"127.0.0.1:{busy_port}")
    assert info.value.where == KEY and f"port {busy_port}" in info.value.fix and "0 picks" in info.value.fix


def test_collector_port_in_use(busy_port: int, tmp_path: Path) -> None:
    config = collect_config_from_dict(
        {"store": str(tmp_path / "f.sqlite"), "metrics_address": f"127.0.0.1:{busy_port}"}
    )
    service = CollectorService(config)
    try:
        with pytest.raises(ConfigError) as info:
            service.start_metrics_server()
    finally:
        service.close()
    assert info.value.where == "collect.metrics_address" and "in use" in info.value.message


def test_prometheus_client_0_19_return_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """0.19's start_http_server returns None: a fixed port still works, port 0 cannot."""
    started = []
    real = metrics_module.start_http_server

    def old_style(*args, **kwargs):
        started.append(real(*args, **kwargs))  # kept only to stop it after the test
        return None

    monkeypatch.setattr(metrics_module, "start_http_server", old_style)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    try:
        server, port = serve_metrics(f"127.0.0.1:{free}", registry(), KEY)
        assert server is None and port == free
        assert "rush_test_events" in requests.get(f"http://127.0.0.1:{free}/metrics", timeout=5).text
        with pytest.raises(ConfigError, match="prometheus-client>=0.20"):
            serve_metrics("127.0.0.1:0", registry(), KEY)
    finally:
        for server, _thread in started:
            server.shutdown()
            server.server_close()


def rush_cli(*argv: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "rush", *argv], capture_output=True, text=True, timeout=120
    )


def daemon_config(tmp_path: Path, address: str) -> Path:
    path = tmp_path / "rush.toml"
    path.write_text(
        f'[daemon]\njournal = "{tmp_path / "j.sqlite"}"\nmetrics_address = "{address}"\n'
        '[rjms.options]\nrest_url = "http://127.0.0.1:1"\n'
        f'[collect]\nstore = "{tmp_path / "f.sqlite"}"\nmetrics_address = "{address}"\n'
    )
    return path


@pytest.mark.parametrize("command", ["daemon", "collect"])
def test_cli_port_in_use_exits_2(busy_port: int, tmp_path: Path, command: str) -> None:
    out = rush_cli(command, "--config", str(daemon_config(tmp_path, f"127.0.0.1:{busy_port}")))
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"{command}.metrics_address" in out.stderr and "fix:" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("command", ["daemon", "collect"])
def test_cli_ipv6_address_on_a_host_without_ipv6_exits_2(tmp_path: Path, command: str) -> None:
    """A network namespace with IPv6 disabled is a host without IPv6."""
    if shutil.which("unshare") is None:
        pytest.skip("util-linux unshare is not installed")
    probe = subprocess.run(
        ["unshare", "--net", "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"], capture_output=True
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot make a network namespace without IPv6: {probe.stderr.decode().strip()}")
    script = 'ip link set lo up && sysctl -qw net.ipv6.conf.all.disable_ipv6=1 && exec "$@"'
    out = rush_cli(
        command,
        "--config",
        str(daemon_config(tmp_path, "[::1]:0")),
        prefix=("unshare", "--net", "sh", "-c", script, "sh"),
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "metrics_address" in out.stderr and "127.0.0.1" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
