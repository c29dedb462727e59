"""The newcomer path: the set-up script's install step, the wheel's contents, start-up imports.

The install test runs the real ``./setup.sh install`` into a fresh virtual environment (its
dependencies come from the project's environment through a ``.pth`` file, so nothing is
downloaded but the build backend), twice, with a non-editable leftover ``rush/`` planted in
site-packages, the state that made ``make demo`` then ``make test`` break ``rush``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _purelib(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def _build_backend_unreachable(output: str) -> bool:
    return "No matching distribution found for setuptools" in output or "Could not find a version" in output


def test_install_step_twice_with_a_stale_copy(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    site = _purelib(python)
    # The project's environment provides numpy, numba, ... (a .pth is read at start-up).
    (site / "project_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # Leftover of a non-editable install: numba cache files make rush/ a namespace package.
    stale = site / "rush" / "__pycache__"
    stale.mkdir(parents=True)
    (stale / "loop.run_simulation-99.py311.nbi").write_bytes(b"stale")
    env = {**os.environ, "RUSH_VENV": str(venv)}
    env.pop("VIRTUAL_ENV", None)

    first = subprocess.run(
        [str(REPO / "setup.sh"), "install"], capture_output=True, text=True, env=env, timeout=600
    )
    if first.returncode != 0 and _build_backend_unreachable(first.stdout + first.stderr):
        pytest.skip("pip cannot fetch the build backend (setuptools) here: no package index")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "removing a non-editable copy" in first.stdout and not (site / "rush").exists()
    assert "warm:" in first.stdout

    second = subprocess.run(
        [str(REPO / "setup.sh"), "install"], capture_output=True, text=True, env=env, timeout=600
    )
    assert second.returncode == 0, second.stdout + second.stderr
    assert "up to date" in second.stdout and "installing rush" not in second.stdout

    version = subprocess.run(
        [str(venv / "bin" / "rush"), "--version"], capture_output=True, text=True, env=env
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.split() == ["rush", _project_version(), f"({REPO / 'rush'})"]
    help_ = subprocess.run([str(venv / "bin" / "rush"), "--help"], capture_output=True, text=True, env=env)
    assert help_.returncode == 0 and "simulate" in help_.stdout and "warmup" in help_.stdout

    # The test command (here on a directory without tests): pytest's "no tests" (5) fails it.
    (tmp_path / "empty").mkdir()
    tests = subprocess.run(
        [str(REPO / "setup.sh"), "test", str(tmp_path / "empty")],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert tests.returncode == 5, tests.stdout + tests.stderr
    assert "pytest collected no tests" in tests.stderr
    assert "extras: test,mpi,cassandra,dask" in tests.stdout  # the same editable rush, with the test extras


def _project_version() -> str:
    import tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def test_setup_script_rejects_an_unknown_command() -> None:
    out = subprocess.run([str(REPO / "setup.sh"), "deploy"], capture_output=True, text=True)
    assert out.returncode == 2 and "usage: ./setup.sh demo | test" in out.stderr


def test_setup_script_never_deletes_a_directory_that_is_not_a_venv(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("precious\n")
    env = {**os.environ, "RUSH_VENV": str(tmp_path)}
    out = subprocess.run([str(REPO / "setup.sh"), "install"], capture_output=True, text=True, env=env)
    assert out.returncode == 2 and "is not a virtual environment" in out.stderr and "fix:" in out.stderr
    assert (tmp_path / "data.txt").read_text() == "precious\n"


def test_ci_runs_the_setup_test_command_and_returns_its_status(tmp_path: Path) -> None:
    # .ci/run from a copy of the tree whose setup.sh only records its arguments and exits 5
    # (pytest's "no tests"): CI must run `./setup.sh test ARGS` from the checkout and fail with
    # its status. What the real `./setup.sh test` does: test_install_step_twice_with_a_stale_copy;
    # that the README shows the two set-up commands: tests/test_docs.py.
    (tmp_path / ".ci").mkdir()
    shutil.copy2(REPO / ".ci" / "run", tmp_path / ".ci" / "run")
    setup = tmp_path / "setup.sh"
    setup.write_text('#!/usr/bin/env bash\necho "$PWD" "$@" > called\nexit 5\n')
    setup.chmod(0o755)
    out = subprocess.run(
        [str(tmp_path / ".ci" / "run"), "tests/simulator"], capture_output=True, text=True, cwd="/"
    )
    assert out.returncode == 5, out.stderr
    assert (tmp_path / "called").read_text().split() == [str(tmp_path), "test", "tests/simulator"]


def test_setup_script_offers_the_demo_and_test_commands() -> None:
    out = subprocess.run([str(REPO / "setup.sh"), "--help"], capture_output=True, text=True)
    usage = out.stderr.splitlines()[0]
    assert out.returncode == 2 and usage.startswith("usage: ./setup.sh demo | test"), out.stderr


def test_wheel_ships_the_probe_and_no_caches(tmp_path: Path) -> None:
    # Build from a copy (the build writes build/ and *.egg-info next to the sources), caches included.
    source = tmp_path / "src"
    shutil.copytree(
        REPO,
        source,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "runs", "build", "dist", "*.egg-info", ".pytest_cache"
        ),
    )
    cache = source / "rush" / "simulator" / "__pycache__"
    cache.mkdir(exist_ok=True)
    (cache / "loop.run_simulation-99.py311.nbi").write_bytes(b"planted")
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(tmp_path / "dist")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if out.returncode != 0 and _build_backend_unreachable(out.stdout + out.stderr):
        pytest.skip("pip cannot fetch the build backend (setuptools) here: no package index")
    assert out.returncode == 0, out.stderr
    (wheel,) = (tmp_path / "dist").glob("rush-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "rush/collect/mpi_probe.py" in names and "rush/data/trace_manifest.tsv" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith((".nbi", ".nbc", ".pyc"))]


def test_probe_script_is_found_inside_the_package() -> None:
    import rush
    from rush.collect.probe import PROBE_SCRIPT

    assert PROBE_SCRIPT.is_file() and PROBE_SCRIPT.parent.parent == Path(rush.__file__).parent
    # The documented path still works (a link into the package).
    assert (REPO / "collectors" / "mpi_probe.py").resolve() == PROBE_SCRIPT.resolve()


FAKE_BUILD = """#!/usr/bin/env bash
# A vendored build: starts, waits (up to 30 s) until the first pytest part has started, ends.
echo "start $(basename "$0")" >> "$EVENTS"
for _ in $(seq 300); do [ -e "$EVENTS.part1" ] && break; sleep 0.1; done
echo "end $(basename "$0")" >> "$EVENTS"
echo "vendor: built $(basename "$0")"
exit "${FAKE_BUILD_RC:-0}"
"""
FAKE_PYTHON = """#!/usr/bin/env bash
# The venv's python as pytest: records its part and arguments, exits with the part's status.
echo "pytest $RUSH_TEST_PART $*" >> "$EVENTS"
[ "$RUSH_TEST_PART" = debian-slurm ] && touch "$EVENTS.part1"
rc=FAKE_RC_${RUSH_TEST_PART//-/_}
exit "${!rc:-0}"
"""


def beside_builds(tmp_path: Path, **rcs: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """.ci/pytest-beside-builds.sh in a copy of the tree whose builds and pytest are fakes."""
    tree = tmp_path / "tree"
    (tree / ".ci").mkdir(parents=True)
    shutil.copy2(REPO / ".ci" / "pytest-beside-builds.sh", tree / ".ci")
    for name in ("vendor-flux.sh", "vendor-slurm.sh", "vendor-pyslurm.sh"):
        (tree / ".ci" / name).write_text(FAKE_BUILD)
    python = tmp_path / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    events = tmp_path / "events"
    env = {**os.environ, "EVENTS": str(events), "TMPDIR": str(tmp_path), **rcs}
    argv = [str(tree / ".ci" / "pytest-beside-builds.sh"), str(python), "3", "tests/slurm", "-x"]
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    return out, events.read_text().splitlines() if events.exists() else []


def test_the_builds_run_beside_debian_slurms_tests_then_the_rest(tmp_path: Path) -> None:
    out, events = beside_builds(tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    common = "-m pytest -q -ra -n 3 --dist loadgroup --durations=40"
    first = f"pytest debian-slurm {common} --ignore=tests/flux tests/slurm -x"
    # The first part started while the first build ran; the rest only after the last build.
    assert events.index(first) < events.index("end vendor-flux.sh"), events
    assert events[-1] == f"pytest rest {common} tests/slurm -x", events
    builds = [e for e in events if not e.startswith("pytest")]
    assert [e.split()[1] for e in builds[::2]] == ["vendor-flux.sh", "vendor-slurm.sh", "vendor-pyslurm.sh"]
    assert builds == [
        f"{what} {e.split()[1]}" for e in builds[::2] for what in ("start", "end")
    ]  # one at a time
    assert "pytest exit 0; the rest: pytest exit 0" in out.stdout


@pytest.mark.parametrize(
    ("first", "rest", "status"),
    [("1", "0", 1), ("0", "1", 1), ("5", "0", 0), ("0", "5", 0), ("5", "5", 5), ("2", "5", 2)],
)
def test_either_part_failing_fails_the_run(tmp_path: Path, first: str, rest: str, status: int) -> None:
    out, events = beside_builds(tmp_path, FAKE_RC_debian_slurm=first, FAKE_RC_rest=rest)
    assert out.returncode == status, out.stdout + out.stderr
    assert events[-1].startswith("pytest rest "), events  # the rest runs whatever the first part did
    assert f"pytest exit {first}; the rest: pytest exit {rest}" in out.stdout


def test_a_failed_build_fails_the_run_with_its_log(tmp_path: Path) -> None:
    out, events = beside_builds(tmp_path, FAKE_BUILD_RC="3")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "the vendored builds failed (exit 3)" in out.stderr and "fix:" in out.stderr
    assert "vendor: built vendor-flux.sh" in out.stderr  # the log's tail
    assert not any(e.startswith("pytest rest") for e in events) and "start vendor-slurm.sh" not in events


FAKE_INSTALL = """#!/usr/bin/env bash
touch "$(dirname "$0")/../installed"
exit 1
"""


@pytest.mark.parametrize(
    ("setting", "value", "fix"),
    [
        ("RUSH_TEST_BESIDE_BUILDS", "yes", "set it to 1 or 0"),
        ("RUSH_TEST_BESIDE_BUILDS", "2", "set it to 1 or 0"),
        ("RUSH_TEST_WORKERS", "auto", "set it to e.g. 2"),
        ("RUSH_TEST_WORKERS", "-1", "set it to e.g. 2"),
        ("RUSH_TEST_WORKERS", "2 ", "set it to e.g. 2"),
    ],
)
def test_a_bad_test_setting_is_named_before_anything_is_installed(
    tmp_path: Path, setting: str, value: str, fix: str
) -> None:
    # setup.sh in a copy of the tree whose Debian-package step only leaves a mark: a bad setting
    # must stop `./setup.sh test` with exit 2 (a configuration error) before that step and
    # before the virtual environment is made.
    tree = tmp_path / "tree"
    (tree / ".ci").mkdir(parents=True)
    shutil.copy2(REPO / "setup.sh", tree)
    (tree / ".ci" / "install-deps.sh").write_text(FAKE_INSTALL)
    venv = tmp_path / "venv"
    env = {**os.environ, "RUSH_VENV": str(venv), setting: value}
    out = subprocess.run(
        [str(tree / "setup.sh"), "test"], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"setup.sh: error: {setting} must be" in out.stderr and f"'{value}'" in out.stderr
    assert "fix:" in out.stderr and fix in out.stderr
    assert not (tree / "installed").exists() and not venv.exists()
