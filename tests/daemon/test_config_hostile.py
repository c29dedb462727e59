"""Hostile rush.toml files: every field of the daemon's and the collector's configuration gets
wrong types, NaN/inf, negative and huge values, empty strings and directories; the file itself
gets bad bytes, a FIFO, a directory, 100 MB, deep nesting and broken syntax. Each one must be
a ConfigError naming the key (or the file and line) and the fix; through the command line,
exit status 2 with the message and no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rush.collect.config import load_collect_config
from rush.config_file import MAX_CONFIG_BYTES
from rush.errors import ConfigError
from rush.planner.config import load_config

A_DIRECTORY = "/tmp"  # any existing directory
TOO_LONG = f"/tmp/{'x' * 300}/file"  # a name over NAME_MAX: stat() fails with ENAMETOOLONG
# (section, key, TOML value): each must be refused with the error naming section.key.
DAEMON_CASES = [
    ("daemon", "cycle_interval", '"60"'),
    ("daemon", "cycle_interval", "true"),
    ("daemon", "cycle_interval", "nan"),
    ("daemon", "cycle_interval", "inf"),
    ("daemon", "cycle_interval", "-inf"),
    ("daemon", "cycle_interval", "0"),
    ("daemon", "cycle_interval", "0.5"),
    ("daemon", "cycle_interval", "1e10"),
    ("daemon", "cycle_interval", "-5"),
    ("daemon", "cycle_interval", "[]"),
    ("daemon", "cycle_interval", "1979-05-27"),
    ("daemon", "partitions", '"batch"'),
    ("daemon", "partitions", "[1]"),
    ("daemon", "partitions", '[""]'),
    ("daemon", "partitions", '["a b"]'),
    ("daemon", "partitions", '["a,b"]'),
    ("daemon", "partitions", "[true]"),
    ("daemon", "dry_run", '"false"'),
    ("daemon", "dry_run", "0"),
    ("daemon", "dry_run", "1"),
    ("daemon", "dry_run", '"yes"'),
    ("daemon", "journal", '""'),
    ("daemon", "journal", f'"{A_DIRECTORY}"'),
    ("daemon", "journal", "5"),
    ("daemon", "journal", '"a\\u0000b"'),
    ("daemon", "journal", "true"),
    ("daemon", "journal", f'"{TOO_LONG}"'),
    ("daemon", "query_socket", '""'),
    ("daemon", "query_socket", f'"{A_DIRECTORY}"'),
    ("daemon", "query_socket", "5"),
    ("daemon", "query_socket", '"a\\u0000b"'),
    ("daemon", "query_socket", f'"/run/{"x" * 120}.sock"'),  # longer than a Unix socket path
    ("daemon", "journal_retention", "0"),
    ("daemon", "journal_retention", "-1"),
    ("daemon", "journal_retention", '"0d"'),
    ("daemon", "journal_retention", '"forever"'),
    ("daemon", "journal_retention", "inf"),
    ("daemon", "journal_retention", "nan"),
    ("daemon", "journal_retention", "true"),
    ("daemon", "journal_retention", "60"),
    ("daemon", "journal_retention", '"99999999999999999999d"'),
    ("daemon", "metrics_address", '"localhost"'),
    ("daemon", "metrics_address", '"localhost:99999"'),
    ("daemon", "metrics_address", '":9877"'),
    ("daemon", "metrics_address", '"host:"'),
    ("daemon", "metrics_address", '"[::1:9877"'),
    ("daemon", "metrics_address", '"::1:9877"'),
    ("daemon", "metrics_address", '"[not-v6]:9877"'),
    ("daemon", "metrics_address", '"bad host:80"'),
    ("daemon", "metrics_address", '"host:\u0661\u0662\u0663"'),  # Arabic-Indic digits
    ("daemon", "metrics_address", '"a..b:80"'),
    ("daemon", "metrics_address", "9877"),
    ("daemon", "metrics_address", '""'),
    ("daemon", "max_actions_per_cycle", '"many"'),
    ("daemon", "max_actions_per_cycle", "-1"),
    ("daemon", "max_actions_per_cycle", "1.5"),
    ("daemon", "max_actions_per_cycle", "true"),
    ("daemon", "max_actions_per_cycle", "100000000000000000000000000000"),
    ("daemon", "max_actions_per_cycle", "nan"),
    ("daemon", "max_requeues_per_job", "-1"),
    ("daemon", "max_requeues_per_job", "1000"),
    ("daemon", "max_requeues_per_job", "true"),
    ("daemon", "max_requeues_per_job", '"1"'),
    ("daemon", "backoff_max", "0"),
    ("daemon", "backoff_max", "inf"),
    ("daemon", "backoff_max", "nan"),
    ("daemon", "backoff_max", "1e10"),
    ("daemon", "backoff_max", "true"),
    ("daemon", "max_read_seconds", "0"),
    ("daemon", "max_read_seconds", "inf"),
    ("daemon", "max_read_seconds", "1e9"),
    ("daemon", "max_read_seconds", '"30"'),
    ("policy", "policy", '""'),
    ("policy", "policy", '"SJF"'),
    ("policy", "policy", "5"),
    ("policy", "policy", "true"),
    ("policy", "policy", '"LINEAR:q=nan"'),
    ("policy", "policy", '"LINEAR:q=1e400"'),
    ("policy", "backfill", '"aggressive"'),
    ("policy", "backfill", "true"),
    ("policy", "backfill", '""'),
    ("policy", "placement", '"nearest"'),
    ("policy", "placement", "3"),
    ("policy", "rjms_priority", '"last"'),
    ("policy", "rjms_priority", "true"),
    ("policy", "rjms_priority", '""'),
    ("policy", "runtime_prediction", '"easypp"'),
    ("policy", "runtime_prediction", '"EASY++"'),
    ("policy", "runtime_prediction", '""'),
    ("policy", "runtime_prediction", "true"),
    ("policy", "runtime_prediction", "2"),
    ("policy", "prediction_correction", '"always"'),
    ("policy", "prediction_correction", "false"),
    ("policy", "prediction_correction", '""'),
    ("policy", "estimate_rule", '"tail"'),
    ("policy", "estimate_rule", "2"),
    ("policy", "estimate_rule", '"l2"'),
    ("policy", "max_jobs_considered", "0"),
    ("policy", "max_jobs_considered", "-5"),
    ("policy", "max_jobs_considered", "1e9"),
    ("policy", "max_jobs_considered", "true"),
    ("policy", "max_jobs_considered", '"100"'),
    ("policy", "max_jobs_considered", "100000000"),
    ("policy", "threshold", "nan"),
    ("policy", "threshold", "inf"),
    ("policy", "threshold", "true"),
    ("policy", "threshold", "-1"),
    ("policy", "threshold", "1e300"),
    ("policy", "threshold", '"never"'),
    ("policy", "threshold", '""'),
    ("site", "priority_weight", "0"),
    ("site", "priority_weight", "2147483648"),
    ("site", "priority_weight", "1e3"),
    ("site", "priority_weight", "true"),
    ("site", "fairshare", '"sshare"'),
    ("site", "fairshare", "1"),
    ("policy", "skip_limit", "-1"),
    ("policy", "skip_limit", "1e6"),
    ("policy", "skip_limit", "1000000000"),
    ("policy", "skip_limit", "true"),
    ("policy", "use_classes", '"true"'),
    ("policy", "use_classes", "1"),
    ("policy", "kill_false_small", '"false"'),
    ("policy", "kill_false_small", "0"),
    ("policy", "divider", "0"),
    ("policy", "divider", "-1"),
    ("policy", "divider", "nan"),
    ("policy", "divider", "inf"),
    ("policy", "divider", '"1h"'),
    ("policy", "divider", "true"),
    ("policy", "wait_quantum", "-1"),
    ("policy", "wait_quantum", "nan"),
    ("policy", "wait_quantum", "true"),
    ("policy", "wait_quantum", "1e6"),
    ("policy", "time_origin", "-1"),
    ("policy", "time_origin", "inf"),
    ("policy", "time_origin", '"2025-01-01"'),
    ("policy", "time_origin", "1e300"),
    ("models", "runtime_class", '""'),
    ("models", "runtime_class", f'"{A_DIRECTORY}"'),
    ("models", "runtime_class", "5"),
    ("models", "history", f'"{A_DIRECTORY}"'),
    ("models", "history", '""'),
    ("models", "runtime_quantiles", '""'),
    ("models", "runtime_quantiles", f'"{A_DIRECTORY}"'),
    ("models", "runtime_quantiles", "5"),
    ("models", "small_below", "0"),
    ("models", "small_below", "nan"),
    ("models", "small_below", "true"),
    ("variation", "enabled", '"yes"'),
    ("variation", "enabled", "1"),
    ("variation", "predictor", '"oracle"'),
    ("variation", "predictor", "1"),
    ("variation", "predictor", '""'),
    ("variation", "workload_type", '""'),
    ("variation", "workload_type", "5"),
    ("variation", "workload_type", '"a b"'),
    ("variation", "counter", '""'),
    ("variation", "counter", "5"),
    ("variation", "window", "0"),
    ("variation", "window", "inf"),
    ("variation", "window", "1e12"),
    ("variation", "window", "true"),
    ("variation", "threshold", "nan"),
    ("variation", "threshold", "inf"),
    ("variation", "threshold", "true"),
    ("variation", "threshold", '"high"'),
    ("variation", "store", '""'),
    ("variation", "store", f'"{A_DIRECTORY}"'),
    ("variation", "store", f'"{TOO_LONG}"'),
    ("variation", "model", '""'),
    ("variation", "model", f'"{A_DIRECTORY}"'),
    ("variation", "model", "5"),
    ("variation", "classes", '"variation"'),
    ("variation", "classes", "[]"),
    ("variation", "classes", '["none"]'),
    ("variation", "classes", '["oracle"]'),
    ("variation", "classes", '["little", "variation", "little"]'),
    ("variation", "classes", "[1]"),
    ("variation", "flag_by_size", '"true"'),
    ("variation", "flag_by_size", "1"),
    ("variation", "flag_by_size", '"card"'),
    ("speculative", "enabled", '"yes"'),
    ("speculative", "enabled", "1"),
    ("speculative", "estimator", '"oracle"'),
    ("speculative", "estimator", '"upper-bound"'),
    ("speculative", "samples", "0"),
    ("speculative", "samples", "1e9"),
    ("speculative", "samples", '"20"'),
    ("speculative", "min_samples", "0"),
    ("speculative", "min_samples", "2.5"),
    ("speculative", "alpha", "-1"),
    ("speculative", "alpha", "nan"),
    ("speculative", "beta", "inf"),
    ("speculative", "beta", "1e300"),
    ("speculative", "gamma", "true"),
    ("speculative", "gamma", "-0.5"),
    ("rjms", "backend", '"pbs"'),
    ("rjms", "backend", "1"),
    ("rjms", "backend", '""'),
    ("rjms", "options", "5"),
    ("rjms", "options", "{ timeout = nan }"),
    ("rjms", "options", "{ timeout = inf }"),
    ("rjms", "options", "{ nested = { a = 1 } }"),
    ("rjms", "options", "{ x = [1, 2] }"),
    ("rjms", "options", "{ when = 1979-05-27 }"),
    ("rjms", "options", '{ jwt_file = "a\\u0000b" }'),
]
# The [collect] section as the collector reads it (rush collect): key, TOML value.
COLLECT_CASES = [
    ("interval", "0"),
    ("interval", "-1"),
    ("interval", "nan"),
    ("interval", "inf"),
    ("interval", '"two weeks"'),
    ("interval", "true"),
    ("interval", "1e10"),
    ("interval", '"0s"'),
    ("interval", "0.01"),
    ("interval", '"1e3s"'),
    ("store", '""'),
    ("store", f'"{A_DIRECTORY}"'),
    ("store", f'"{TOO_LONG}"'),
    ("store", "5"),
    ("store", '"a\\u0000b"'),
    ("retention", "0"),
    ("retention", "-1"),
    ("retention", '"0d"'),
    ("retention", "nan"),
    ("retention", "inf"),
    ("retention", "true"),
    ("retention", '"forever"'),
    ("retention", "1e20"),
    ("metrics_address", '"localhost"'),
    ("metrics_address", '"[::1"'),
    ("metrics_address", '"h:70000"'),
    ("metrics_address", "5"),
    ("metrics_address", "true"),
    ("prune_every", "0"),
    ("prune_every", "-1"),
    ("prune_every", "1.5"),
    ("prune_every", "true"),
    ("prune_every", '"60"'),
    ("prune_every", "1000000000000"),
    ("sources", "5"),
    ("sources", '"prometheus"'),
    ("sources", "[5]"),
    ("sources[0].collector", '"nope"'),
    ("sources[0].collector", "5"),
    ("sources[0].collector", '""'),
    ("sources[0].name", "5"),
    ("sources[0].name", '"' + "x" * 300 + '"'),
    ("sources[0].name", "true"),
    ("sources[0].options", "5"),
    ("sources[0].options", "{ a = nan }"),
    ("sources[0].options", "{ a = [1.0, inf] }"),
    ("sources[0].options", "{a={b={c={d={e={f={g={h={i={j=1}}}}}}}}}}"),
    ("sources[0].enabled", '"false"'),
    ("sources[0].enabled", "1"),
]


def write(tmp_path: Path, text: str | bytes, name: str = "rush.toml") -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def collect_toml(key: str, value: str) -> str:
    if key.startswith("sources[0]."):
        field = key.removeprefix("sources[0].")
        source = {"collector": '"prometheus"', field: value}
        body = "\n".join(f"{k} = {v}" for k, v in source.items())
        return f'[collect]\nstore = "f.sqlite"\n\n[[collect.sources]]\n{body}\n'
    return f"[collect]\n{key} = {value}\n"


@pytest.mark.parametrize(("section", "key", "value"), DAEMON_CASES)
def test_daemon_field_refuses(tmp_path: Path, section: str, key: str, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, f"[{section}]\n{key} = {value}\n"))
    err = info.value
    assert err.where is not None and f"{section}.{key}" in err.where, str(err)
    assert err.fix, str(err)


@pytest.mark.parametrize(("key", "value"), COLLECT_CASES)
def test_collect_field_refuses(tmp_path: Path, key: str, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_collect_config(write(tmp_path, collect_toml(key, value)))
    err = info.value
    assert err.where is not None and f"collect.{key}" in err.where, str(err)
    assert err.fix, str(err)


def test_every_field_has_a_hostile_case() -> None:
    from rush.collect.config import CollectConfig, SourceConfig
    from rush.planner.config import RushConfig

    daemon_keys = {f"{s}.{k}" for s, k, _ in DAEMON_CASES}
    for section, info in RushConfig.model_fields.items():
        if section == "collect":
            continue  # the collector's own model, below
        for key in info.annotation.model_fields:  # type: ignore[union-attr]
            assert f"{section}.{key}" in daemon_keys, f"no hostile case for {section}.{key}"
    collect_keys = {k for k, _ in COLLECT_CASES}
    assert set(CollectConfig.model_fields) <= collect_keys
    assert {f"sources[0].{k}" for k in SourceConfig.model_fields} <= collect_keys


def test_values_that_were_misread_now_refused(tmp_path: Path) -> None:
    """The issue's cases: true read as 1 s, "false" read as true, NaN and inf accepted."""
    for text, key in (
        ("[policy]\nthreshold = true\n", "policy.threshold"),
        ("[policy]\nthreshold = nan\n", "policy.threshold"),
        ('[daemon]\ndry_run = "false"\n', "daemon.dry_run"),
        ("[daemon]\ncycle_interval = inf\n", "daemon.cycle_interval"),
        ("[daemon]\ncycle_interval = 1e10\n", "daemon.cycle_interval"),
    ):
        with pytest.raises(ConfigError) as info:
            load_config(write(tmp_path, text))
        assert info.value.where.endswith(key) and f"{key} must be" in info.value.fix
    for text, key in (("collect = 5\n", "collect"), ("daemon = 5\n", "daemon"), ("policy = []\n", "policy")):
        with pytest.raises(ConfigError) as info:
            load_config(write(tmp_path, text))
        assert info.value.where.endswith(key), str(info.value)
    with pytest.raises(ConfigError, match="collect.retention") as info:
        load_collect_config(write(tmp_path, "[collect]\nretention = 0\n"))
    # Good values still pass, with their types.
    config = load_config(write(tmp_path, '[daemon]\ncycle_interval = 30\njournal_retention = "30d"\n'))
    assert config.daemon.cycle_interval == 30.0 and config.daemon.journal_retention == 30 * 86400
    config = load_config(write(tmp_path, '[daemon]\nmetrics_address = "[::1]:0"\n[policy]\nthreshold = 0\n'))
    assert config.policy.threshold == 0.0


# -- the file itself --------------------------------------------------------------------------


def file_cases(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """name -> (path, text the error must contain)."""
    nested = "a = " + "[" * 100_000 + "]" * 100_000 + "\n"
    big = tmp_path / "big.toml"
    with big.open("wb") as handle:  # 100 MB, sparse: the size alone must refuse it
        handle.truncate(100 * 2**20)
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    return {
        "latin-1 bytes": (write(tmp_path, b"[daemon]\n# caf\xe9\n", "latin1.toml"), "not UTF-8"),
        "binary": (write(tmp_path, bytes(range(256)) * 4, "binary.toml"), "not UTF-8"),
        "utf-16": (write(tmp_path, "[daemon]\n".encode("utf-16"), "utf16.toml"), "not UTF-8"),
        "syntax": (write(tmp_path, "[daemon]\ncycle_interval = 60\ndry_run = \n", "syntax.toml"), "line 3"),
        "deep nesting": (write(tmp_path, nested, "nested.toml"), "nested too deeply"),
        "100 MB": (big, "at most"),
        "FIFO": (fifo, "not a regular file"),
        "directory": (tmp_path, "directory"),
        "/dev/zero": (Path("/dev/zero"), "not a regular file"),
        "missing": (tmp_path / "missing.toml", "not found"),
        "NUL in path": (Path(f"{tmp_path}/a\0b.toml"), "cannot read"),
        "one byte too many": (
            write(tmp_path, b"#" * (MAX_CONFIG_BYTES + 1), "over.toml"),
            "at most",
        ),
    }


@pytest.mark.parametrize("loader", [load_config, load_collect_config], ids=["daemon", "collect"])
def test_hostile_files(tmp_path: Path, loader) -> None:
    for name, (path, expected) in file_cases(tmp_path).items():
        with pytest.raises(ConfigError) as info:
            loader(path)
        assert expected in str(info.value), f"{name}: {info.value}"
        assert info.value.where and info.value.where.startswith(str(path).split("\0")[0]), name


def test_non_utf8_error_gives_the_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, b"[daemon]\ncycle_interval = 60\n# r\xe9sum\xe9\n"))
    assert info.value.where.endswith(":3") and "0xe9" in info.value.message


# -- through the command line: exit 2, the message, no traceback -----------------------------


def run_rush(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rush", *argv], capture_output=True, text=True, timeout=timeout
    )


CLI_CASES = {
    "non-UTF-8": (b"[daemon]\n# caf\xe9\n[collect]\n", "not UTF-8"),
    "nan": ("[daemon]\ncycle_interval = nan\n[collect]\ninterval = nan\n", "interval"),
    "bool as seconds": ("[policy]\nthreshold = true\n[collect]\nretention = true\n", "must be"),
    "zero retention": ("[daemon]\njournal_retention = 0\n[collect]\nretention = 0\n", "retention"),
    "syntax": ("[daemon\n[collect]\n", "not valid TOML"),
    "path too long": (f'[daemon]\njournal = "{TOO_LONG}"\n[collect]\nstore = "{TOO_LONG}"\n', "too long"),
}


@pytest.mark.parametrize("case", sorted(CLI_CASES))
@pytest.mark.parametrize("command", ["daemon", "collect"])
def test_cli_exits_2_with_the_message(tmp_path: Path, case: str, command: str) -> None:
    text, expected = CLI_CASES[case]
    path = write(tmp_path, text)
    out = run_rush(command, "--config", str(path), "--once")
    assert out.returncode == 2, out.stdout + out.stderr
    assert expected in out.stderr and "fix:" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_cli_fifo_config_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "rush.toml"
    os.mkfifo(fifo)
    for command in ("daemon", "collect"):
        out = run_rush(command, "--config", str(fifo), "--once", timeout=60)
        assert out.returncode == 2 and "not a regular file" in out.stderr, out.stderr


def test_collect_log_level_is_validated(tmp_path: Path) -> None:
    path = write(tmp_path, '[collect]\nmetrics_address = ""\n')
    out = run_rush("collect", "--config", str(path), "--once", "--log-level", "loud")
    assert out.returncode == 2 and "--log-level" in out.stderr and "warning" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
