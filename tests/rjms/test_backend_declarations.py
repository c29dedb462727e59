"""Backends declare their options and capabilities on the class; options are checked before a
backend is built (an unknown key or a wrong type is a ConfigError, exit 2 from the CLI)."""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from rush.errors import ConfigError
from rush.rjms.base import (
    Capabilities,
    RJMSBackend,
    backend_class,
    backend_names,
    check_options,
    get_backend,
    parse_backend_options,
)
from rush.rjms.flux import FluxBackend
from rush.rjms.slurm import SlurmBackend, SlurmOptions


def test_every_declared_option_is_a_constructor_keyword_and_back() -> None:
    # The declaration and the constructor cannot drift: same names, both ways.
    from rush.rjms.slurm_pyslurm import PySlurmBackend  # the module imports without pyslurm

    for cls in (backend_class("slurm"), backend_class("flux"), PySlurmBackend):
        name = cls.__name__
        if cls.options_type is None:
            keywords = set(inspect.signature(cls.__init__).parameters) - {"self", "handle"}
        else:  # many options: one dataclass the registry builds
            keywords = {field.name for field in dataclasses.fields(cls.options_type)}
        assert {o.name for o in cls.options} == keywords, name


def test_capabilities_are_declared_per_backend() -> None:
    assert SlurmBackend.capabilities == Capabilities(time_limit_granularity=60.0)
    assert FluxBackend.capabilities == Capabilities(
        requeue_replaces_job=True, time_limit_granularity=1.0, submits_node_counts=True
    )
    assert not FluxBackend.capabilities.starts_jobs
    assert backend_names() == ["flux", "pyslurm", "slurm"]


def test_unknown_option_names_the_key_and_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match="does not accept these options: bogus, zzz") as err:
        get_backend("slurm", bogus=1, zzz="x", timeout=5)
    assert err.value.where == "rjms.options"
    assert "valid options: bin_dir, fairshare, fallback, jobcomp_file" in err.value.fix
    with pytest.raises(ConfigError, match="priority_levr") as err:
        parse_backend_options("flux", ["priority_levr=plugin"])
    assert err.value.where == "--rjms-option" and "max_entries, priority_lever, uri" in err.value.fix


def test_strings_are_parsed_to_the_declared_type() -> None:
    parsed = parse_backend_options(
        "slurm", ["timeout=2.5", "fallback=false", "bin_dir=/opt/slurm/bin", "jwt=12345", "max_answer_mb=64"]
    )
    assert parsed == {
        "timeout": 2.5,
        "fallback": False,
        "bin_dir": "/opt/slurm/bin",
        "jwt": "12345",  # declared a string: a numeric token stays text
        "max_answer_mb": 64.0,
    }
    assert parse_backend_options("flux", ["max_entries=20"]) == {"max_entries": 20}


@pytest.mark.parametrize(
    ("name", "options", "where"),
    [
        ("slurm", {"timeout": "soon"}, "rjms.options.timeout"),
        ("slurm", {"fallback": "perhaps"}, "rjms.options.fallback"),
        ("slurm", {"fallback": 1}, "rjms.options.fallback"),
        ("slurm", {"timeout": True}, "rjms.options.timeout"),
        ("slurm", {"bin_dir": 5}, "rjms.options.bin_dir"),
        ("flux", {"max_entries": 2.5}, "rjms.options.max_entries"),
        ("flux", {"max_entries": "many"}, "rjms.options.max_entries"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused(name: str, options: dict, where: str) -> None:
    with pytest.raises(ConfigError, match="invalid") as err:
        check_options(backend_class(name), options)
    assert err.value.where == where


def test_bad_pair_and_unknown_backend() -> None:
    with pytest.raises(ConfigError, match="bad backend option"):
        parse_backend_options("slurm", ["timeout"])
    with pytest.raises(ConfigError, match="unknown RJMS backend"):
        parse_backend_options("pbs", ["timeout=1"])


def test_a_backend_that_requeues_in_place_confirms_no_replacement() -> None:
    class InPlace(SlurmBackend):
        pass

    assert RJMSBackend.confirm_replacement is InPlace.confirm_replacement
    with pytest.raises(NotImplementedError, match="requeues in place"):
        InPlace(SlurmOptions(bin_dir="/nonexistent")).confirm_replacement(1, {}, None)  # type: ignore[arg-type]


def _rush(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rush", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


@pytest.mark.parametrize(
    "command",
    [
        ["replay", "lublin:20:16", "--window", "0:5"],
        ["campaign", "run", "--apps", "halo", "--runs", "1", "--out", "campaign"],
        ["probe", "submit"],
    ],
)
def test_cli_unknown_rjms_option_exits_2_naming_it(command: list[str], tmp_path: Path) -> None:
    run = _rush(*command, "--rjms-option", "slurm_confx=/etc/slurm.conf", cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    assert "slurm_confx" in run.stderr and "--rjms-option" in run.stderr
    assert "valid options:" in run.stderr and "slurm_conf" in run.stderr
    assert not (tmp_path / "campaign").exists()
