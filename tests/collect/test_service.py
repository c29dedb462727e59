"""The collector service: [collect] config validation, cycles into the store, failing sources,
and a real scrape of its self-metrics endpoint. Sources read a real Prometheus fed by a real
node_exporter over the fixture sysfs (tests/collect/fixtures_prom)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from rush.cli.main import app
from rush.collect.config import CollectConfig, collect_config_from_dict, load_collect_config, parse_duration
from rush.collect.service import CollectorService, open_store
from rush.errors import ConfigError
from tests.collect.fixtures_prom import Rates, Stack, free_port, running_stack, tools_available

RATES = Rates()


# --------------------------------------------------------------------------------- config


def test_unknown_keys_are_named() -> None:
    with pytest.raises(ConfigError) as info:
        collect_config_from_dict({"intervall": 5})
    assert "unknown key 'collect.intervall'" in info.value.message
    with pytest.raises(ConfigError) as info:
        collect_config_from_dict({"sources": [{"collector": "prometheus", "optoins": {}}]})
    assert "collect.sources[0].optoins" in info.value.message
    assert info.value.fix


def test_bad_values_are_named() -> None:
    with pytest.raises(ConfigError, match="collect.interval"):
        collect_config_from_dict({"interval": -1})
    with pytest.raises(ConfigError, match="collect.retention"):
        collect_config_from_dict({"retention": "two weeks"})
    with pytest.raises(ConfigError, match="collect.metrics_address"):
        collect_config_from_dict({"metrics_address": "localhost"})
    with pytest.raises(ConfigError, match="duplicate source name"):
        collect_config_from_dict({"sources": [{"collector": "prometheus"}, {"collector": "prometheus"}]})
    # A misspelt collector never starts working: refused at start-up, with the names allowed.
    with pytest.raises(ConfigError, match=r"collect.sources\[0\].collector") as info:
        collect_config_from_dict({"sources": [{"collector": "no_such_collector"}]})
    assert "prometheus" in info.value.message and "no_such_collector" in info.value.message


def test_durations_and_defaults() -> None:
    assert parse_duration("14d") == 14 * 86400
    assert parse_duration("90s") == 90 and parse_duration("2m") == 120 and parse_duration(7) == 7
    config = collect_config_from_dict(
        {"interval": "30s", "retention": "12h", "sources": [{"collector": "prometheus"}]}
    )
    assert config.interval == 30 and config.retention == 12 * 3600
    assert config.sources[0].name == "prometheus"
    assert config.metrics_host_port == ("127.0.0.1", 9466)
    assert collect_config_from_dict({"metrics_address": ""}).metrics_host_port is None


def test_load_from_rush_toml(tmp_path: Path) -> None:
    toml = tmp_path / "rush.toml"
    toml.write_text(
        '[daemon]\nbackend = "slurm"\n\n[collect]\nstore = "f.sqlite"\n\n'
        '[[collect.sources]]\ncollector = "prometheus"\noptions = { url = "http://p:9090" }\n'
    )
    config = load_collect_config(toml)
    assert config.store == tmp_path / "f.sqlite"  # relative to the config file
    assert config.sources[0].options == {"url": "http://p:9090"}
    toml.write_text("[daemon]\n")
    with pytest.raises(ConfigError, match=r"no \[collect\] section"):
        load_collect_config(toml)
    toml.write_text("[collect\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_collect_config(toml)


# --------------------------------------------------------------------------------- service


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    if not tools_available():
        pytest.skip("prometheus / prometheus-node-exporter not installed")
    with running_stack(tmp_path_factory.mktemp("svc"), RATES, scrapes=6) as running:
        yield running


def _config(stack: Stack, store: Path, **extra: object) -> CollectConfig:
    dead = f"http://127.0.0.1:{free_port()}"
    return collect_config_from_dict(
        {
            "interval": 0.5,
            "store": str(store),
            "metrics_address": "127.0.0.1:0",
            "sources": [
                {
                    "collector": "prometheus",
                    "name": "prom",
                    "options": {"url": stack.url, "rate_window": "5s"},
                },
                {"collector": "prometheus", "name": "down", "options": {"url": dead, "timeout": 2}},
                {
                    "collector": "prometheus",
                    "name": "badopts",
                    "options": {"url": stack.url, "colour": "red"},
                },
                {"collector": "prometheus", "name": "off", "enabled": False, "options": {"url": dead}},
            ],
            **extra,
        }
    )


def _metrics(host: str, port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = requests.get(f"http://{host}:{port}/metrics", timeout=5).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_cycles_store_samples_and_count_failures(stack: Stack, tmp_path: Path) -> None:
    store_path = tmp_path / "features.sqlite"
    service = CollectorService(_config(stack, store_path))
    try:
        host, port = service.start_metrics_server() or ("", 0)
        assert port > 0
        t0 = time.time()
        reports = service.run(cycles=2)
        assert len(reports) == 2
        for report in reports:
            assert set(report.errors) == {"down", "badopts"}
            assert "cannot connect" in report.errors["down"]
            assert "colour" in report.errors["badopts"]
            assert report.samples == 6  # six IB/RAPL rates for the one node_exporter
        assert reports[1].started - reports[0].started >= 0.45  # the interval is honoured

        metrics = _metrics(host, port)
        assert metrics[("rush_collect_samples_total", (("source", "prom"),))] == 12
        assert metrics[("rush_collect_errors_total", (("source", "prom"),))] == 0
        for name in ("down", "badopts"):
            assert metrics[("rush_collect_errors_total", (("source", name),))] == 2
            assert ("rush_collect_last_success_timestamp_seconds", (("source", name),)) not in metrics
        assert metrics[("rush_collect_last_success_timestamp_seconds", (("source", "prom"),))] >= t0
        assert metrics[("rush_collect_cycle_duration_seconds_count", ())] == 2
        assert not any(dict(labels).get("source") == "off" for _, labels in metrics)
    finally:
        service.close()

    store = open_store(store_path)
    try:
        features = store.window_features(["127.0.0.1"], t0 - 5, time.time() + 5, ["prometheus"])
    finally:
        store.close()
    assert features["mean_ib_xmit_bytes_per_s"] == pytest.approx(4 * RATES.xmit_words_per_s, rel=0.1)
    assert features["mean_rapl_package_watts"] == pytest.approx(RATES.package_uj_per_s / 1e6, rel=0.1)


def test_run_stops_on_event(stack: Stack, tmp_path: Path) -> None:
    service = CollectorService(_config(stack, tmp_path / "f.sqlite", interval=60))
    stop = threading.Event()
    threading.Timer(1.0, stop.set).start()
    try:
        t0 = time.monotonic()
        reports = service.run(stop=stop)
        assert len(reports) == 1  # the second cycle would be 60 s later; the event ended the wait
        assert time.monotonic() - t0 < 30
    finally:
        service.close()


def test_cli_once(stack: Stack, tmp_path: Path) -> None:
    toml = tmp_path / "rush.toml"
    toml.write_text(
        f'[collect]\nstore = "f.sqlite"\nmetrics_address = ""\n\n'
        f'[[collect.sources]]\ncollector = "prometheus"\noptions = {{ url = "{stack.url}", rate_window = "5s" }}\n'
        f'[[collect.sources]]\ncollector = "prometheus"\nname = "down"\noptions = {{ url = "http://127.0.0.1:{free_port()}" }}\n'
    )
    result = CliRunner().invoke(app, ["collect", "--config", str(toml), "--once"])
    assert result.exit_code == 0, result.output
    assert "collected 6 samples from 2 sources" in result.output
    store = open_store(tmp_path / "f.sqlite")
    try:
        features = store.window_features(["127.0.0.1"], time.time() - 60, time.time() + 5, ["prometheus"])
    finally:
        store.close()
    assert "max_rapl_dram_watts" in features


def test_cli_rejects_unknown_key(tmp_path: Path) -> None:
    toml = tmp_path / "rush.toml"
    toml.write_text("[collect]\nintrval = 3\n")
    result = CliRunner().invoke(app, ["collect", "--config", str(toml), "--once"])
    assert result.exit_code != 0
    assert isinstance(result.exception, ConfigError)
    assert "collect.intrval" in str(result.exception)
