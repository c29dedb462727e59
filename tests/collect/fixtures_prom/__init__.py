"""Real node_exporter + Prometheus for the collector tests, fed by a fixture sysfs tree.

``sys/`` here is a minimal sysfs: one InfiniBand HCA (mlx4_0, port 1, with the fw_ver, state,
phys_state and rate files node_exporter 1.5 requires) and two RAPL zones (package-0 and dram).
Tests copy it to a temp dir and a :class:`CounterDriver` thread advances the counters at known
rates while node_exporter serves them and Prometheus scrapes every second.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

FIXTURE_SYS = Path(__file__).parent / "sys"
NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
PROMETHEUS = "/usr/bin/prometheus"
IB_PORT = Path("class/infiniband/mlx4_0/ports/1/counters")
RAPL_PACKAGE = Path("class/powercap/intel-rapl:0")
RAPL_DRAM = Path("class/powercap/intel-rapl:0:0")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def copy_sysfs(dest: Path) -> Path:
    shutil.copytree(FIXTURE_SYS, dest)
    return dest


def write_atomic(path: Path, text: str) -> None:
    # Replace, never truncate: node_exporter must never read a half-written counter. The temp
    # file sits next to the counter; node_exporter ignores names it does not know.
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


@dataclass
class Rates:
    xmit_words_per_s: float = 2_500_000.0  # 4-octet words: 10 MB/s
    rcv_words_per_s: float = 1_250_000.0  # 5 MB/s
    xmit_packets_per_s: float = 5_000.0
    package_uj_per_s: float = 85_000_000.0  # 85 W
    dram_uj_per_s: float = 12_000_000.0  # 12 W


class CounterDriver(threading.Thread):
    """Advance the fixture counters linearly in time (every 0.1 s) at :class:`Rates`."""

    def __init__(self, sysfs: Path, rates: Rates) -> None:
        super().__init__(daemon=True)
        self.sysfs, self.rates = sysfs, rates
        self.stop_event = threading.Event()
        self.start_time = time.time()
        base = {
            name: int((sysfs / IB_PORT / name).read_text())
            for name in ("port_xmit_data", "port_rcv_data", "port_xmit_packets")
        }
        self.base = base | {
            "package": int((sysfs / RAPL_PACKAGE / "energy_uj").read_text()),
            "dram": int((sysfs / RAPL_DRAM / "energy_uj").read_text()),
        }

    def tick(self) -> None:
        dt = time.time() - self.start_time
        r, b, ib = self.rates, self.base, self.sysfs / IB_PORT
        write_atomic(ib / "port_xmit_data", f"{b['port_xmit_data'] + int(r.xmit_words_per_s * dt)}\n")
        write_atomic(ib / "port_rcv_data", f"{b['port_rcv_data'] + int(r.rcv_words_per_s * dt)}\n")
        write_atomic(ib / "port_xmit_packets", f"{b['port_xmit_packets'] + int(r.xmit_packets_per_s * dt)}\n")
        write_atomic(
            self.sysfs / RAPL_PACKAGE / "energy_uj", f"{b['package'] + int(r.package_uj_per_s * dt)}\n"
        )
        write_atomic(self.sysfs / RAPL_DRAM / "energy_uj", f"{b['dram'] + int(r.dram_uj_per_s * dt)}\n")

    def run(self) -> None:
        while not self.stop_event.is_set():
            self.tick()
            self.stop_event.wait(0.1)

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=5)


def wait_http(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 20.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
        try:
            if requests.get(url, timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} not ready after {timeout} s:\n{log.read_text()[-2000:]}")


@contextmanager
def process(args: list[str], log: Path, ready_url: str) -> Iterator[subprocess.Popen[bytes]]:
    """Start a daemon, wait until ``ready_url`` answers 200, stop it by PID on exit."""
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_http(ready_url, proc, log)
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


@contextmanager
def node_exporter(sysfs: Path, workdir: Path) -> Iterator[str]:
    """node_exporter with only the infiniband and rapl collectors; yields its host:port."""
    address = f"127.0.0.1:{free_port()}"
    args = [
        NODE_EXPORTER,
        f"--path.sysfs={sysfs}",
        "--collector.disable-defaults",
        "--collector.infiniband",
        "--collector.rapl",
        "--web.disable-exporter-metrics",
        f"--web.listen-address={address}",
    ]
    with process(args, workdir / "node_exporter.log", f"http://{address}/metrics"):
        yield address


@contextmanager
def prometheus(targets: list[str], workdir: Path, interval: str = "1s") -> Iterator[str]:
    """Prometheus scraping ``targets`` every ``interval`` into a temp TSDB; yields its base URL."""
    address = f"127.0.0.1:{free_port()}"
    config = workdir / "prometheus.yml"
    quoted = ", ".join(f"'{t}'" for t in targets)
    config.write_text(
        f"global:\n  scrape_interval: {interval}\n  evaluation_interval: {interval}\n"
        f"scrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: [{quoted}]\n"
    )
    args = [
        PROMETHEUS,
        f"--config.file={config}",
        f"--storage.tsdb.path={workdir / 'tsdb'}",
        f"--web.listen-address={address}",
        "--storage.tsdb.retention.time=1h",
    ]
    with process(args, workdir / "prometheus.log", f"http://{address}/-/ready"):
        yield f"http://{address}"


def wait_for_samples(url: str, expr: str, count: int, timeout: float = 30.0) -> None:
    """Block until ``count_over_time(expr[1m])`` reaches ``count`` scrapes."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        body = requests.get(
            f"{url}/api/v1/query", params={"query": f"count_over_time({expr}[1m])"}, timeout=5
        ).json()
        result = body.get("data", {}).get("result", [])
        if result and float(result[0]["value"][1]) >= count:
            return
        time.sleep(0.5)
    raise RuntimeError(f"Prometheus did not scrape {expr} {count} times in {timeout} s")


def tools_available() -> bool:
    return os.access(NODE_EXPORTER, os.X_OK) and os.access(PROMETHEUS, os.X_OK)


@dataclass
class Stack:
    sysfs: Path
    exporter: str  # host:port of node_exporter
    url: str  # Prometheus base URL


@contextmanager
def running_stack(workdir: Path, rates: Rates, scrapes: int = 10) -> Iterator[Stack]:
    """Fixture sysfs + counter thread + node_exporter + Prometheus, after ``scrapes`` scrapes."""
    sysfs = copy_sysfs(workdir / "sys")
    driver = CounterDriver(sysfs, rates)
    driver.tick()
    driver.start()
    try:
        with node_exporter(sysfs, workdir) as exporter, prometheus([exporter], workdir) as url:
            wait_for_samples(url, "node_infiniband_port_data_transmitted_bytes_total", scrapes)
            yield Stack(sysfs, exporter, url)
    finally:
        driver.stop()
