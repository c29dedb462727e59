"""Start-up: what ``rush --help`` imports, the compile notice on a cold numba cache, warmup.

Behaviour only (which modules are loaded, what is printed); the times are in
``benchmarks/bench_startup.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from rush.core.names import POLICY_CODES

HEAVY = ("numba", "numpy", "scipy", "sklearn", "matplotlib", "pandas", "rich")


def python(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


def rush(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rush", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=900,
    )


def test_cli_import_loads_no_heavy_module() -> None:
    out = python(
        f"""
        import json, sys
        import rush.cli.main
        print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))
        """
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


def test_help_lists_every_policy() -> None:
    out = rush("simulate", "--help")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    for name in POLICY_CODES:
        assert f"{name}," in text or f"{name}:" in text, name
    assert "easy | conservative | none" in text


def test_version() -> None:
    import rush as package

    out = rush("--version")
    assert out.returncode == 0 and out.stdout.split()[:2] == ["rush", package.__version__]


def test_cold_cache_is_announced_before_any_work(tmp_path: Path) -> None:
    # An empty NUMBA_CACHE_DIR is a cold cache. The trace does not exist, so the command
    # stops right after the notice and nothing is compiled.
    out = rush("simulate", str(tmp_path / "missing.swf"), env={"NUMBA_CACHE_DIR": str(tmp_path / "numba")})
    assert out.returncode == 2
    assert out.stderr.startswith("rush: compiling the scheduling core (first run only")
    assert "no such trace file" in out.stderr


def test_blas_probe_skipped_and_numpy_linear_algebra_still_works() -> None:
    out = python(
        """
        import sys
        import numba
        import numpy as np
        from rush.jit_cache import skip_numba_blas_probe
        skip_numba_blas_probe()
        assert "numba.np.arraymath" in sys.modules and "scipy.linalg" not in sys.modules
        @numba.njit
        def dot(a):
            return np.dot(a, a)
        print(dot(np.arange(3.0)))
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "5.0"


def test_warmup_fills_a_cold_cache(tmp_path: Path) -> None:
    # The slow path once (compiling into an empty cache), then the notice is gone.
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    cold = python("from rush.jit_cache import cold_entry_points; print(len(cold_entry_points()))", env)
    assert cold.returncode == 0 and cold.stdout.strip() == "3", cold.stderr
    warm = rush("warmup", env=env)
    assert warm.returncode == 0, warm.stderr
    assert "warm: SWF reader" in warm.stdout
    after = python("from rush.jit_cache import cold_entry_points; print(cold_entry_points())", env)
    assert after.stdout.strip() == "[]", after.stderr
    run = rush("simulate", "lublin:300:16:1", "--json", env=env)
    assert run.returncode == 0, run.stderr
    assert "compiling" not in run.stderr and json.loads(run.stdout)["jobs"] == 300


def test_kernel_cache_follows_every_kernel_source(tmp_path: Path) -> None:
    # numba keys run_simulation's cache on loop.py only; an edit to easy.py alone once
    # replayed the old EASY pass. The cache directory is named after all kernel sources.
    import shutil

    import rush
    from rush.jit_cache import kernel_sources_digest

    copy = tmp_path / "rush"
    shutil.copytree(Path(rush.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = kernel_sources_digest(copy)
    assert before == kernel_sources_digest(Path(rush.__file__).parent)
    (copy / "cli" / "main.py").write_text((copy / "cli" / "main.py").read_text() + "\n# no kernel here\n")
    assert kernel_sources_digest(copy) == before  # no recompilation for a non-kernel edit
    backfill = copy / "core" / "easy.py"
    assert "out.backfilled[ns] = True" in backfill.read_text()  # the edit below must change something
    backfill.write_text(
        backfill.read_text().replace("out.backfilled[ns] = True", "out.backfilled[ns] = False")
    )
    assert kernel_sources_digest(copy) != before


def test_numba_cache_directory_choice(tmp_path: Path) -> None:
    from rush.jit_cache import CACHE_PREFIX, configure_numba_cache, kernel_sources_digest

    name = f"{CACHE_PREFIX}{kernel_sources_digest()}"
    environ = {"RUSH_CACHE_DIR": str(tmp_path)}
    assert configure_numba_cache(environ) == str(tmp_path / "numba" / name)
    # A child rush process inherits the variable and keeps it (no nesting).
    assert configure_numba_cache(environ) == str(tmp_path / "numba" / name)
    stale = {"NUMBA_CACHE_DIR": str(tmp_path / "site" / f"{CACHE_PREFIX}0123456789abcdef")}
    assert configure_numba_cache(stale) == str(tmp_path / "site" / name)
    # An administrator's directory (e.g. the systemd unit's) is the base.
    assert (
        configure_numba_cache({"NUMBA_CACHE_DIR": "/var/cache/rush/numba"}) == f"/var/cache/rush/numba/{name}"
    )
    # In a real process the kernels use it, also when numba was imported first.
    out = python(
        """
        import os, numba
        import rush.simulator.loop as loop
        print(loop.run_simulation._cache._cache_path.startswith(os.environ["NUMBA_CACHE_DIR"] + os.sep))
        print(os.path.basename(os.environ["NUMBA_CACHE_DIR"]))
        """,
        {"RUSH_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", name]
