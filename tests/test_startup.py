"""Start-up: what ``rush --help``, ``rush explain`` and ``rush simulate`` import, the compile
notice on a cold numba cache, warmup, and numba configured only when it is imported.

Behaviour only (which modules are loaded, what is printed); the times are in
``benchmarks/bench_startup.py`` and ``benchmarks/bench_explain.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rush.core.config import CoreConfig
from rush.core.names import POLICY_CODES
from rush.core.priority_terms import JobInputs
from rush.planner.queue_view import terms_json
from tests.planner.journal_query_data import ORIGIN, T0, JournalContents, queue_row, write_journal

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


def in_process(argv: list[str], report: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``rush ARGV`` through the console entry point in a fresh interpreter, then print
    ``report`` (a Python expression over ``sys.modules``) as JSON on stderr's last line.

    The report is an atexit handler: ``rush simulate`` ends with ``os._exit`` after running
    them (:func:`rush.cli.main.leave_at_once`), so nothing after ``main()`` would run."""
    return python(
        f"""
        import atexit, json, sys
        sys.argv = ["rush", *{argv!r}]
        atexit.register(lambda: print(json.dumps({report}), file=sys.stderr))
        from rush.cli.main import main
        main()
        """,
        env,
    )


def report_of(out: subprocess.CompletedProcess) -> tuple[int, object]:
    return out.returncode, json.loads(out.stderr.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    policy = "LINEAR:q=1,wait=-0.01"
    config = CoreConfig.from_names(policy)
    terms = terms_json(config, policy, JobInputs(T0 - 3600, 4, 7200.0), T0, ORIGIN)
    queue = [queue_row(1, priority=5, priority_terms=terms), queue_row(2, state="running", start=T0 - 60)]
    return write_journal(
        tmp_path_factory.mktemp("startup") / "journal.sqlite", JournalContents(queue, policy=policy)
    )


@pytest.mark.parametrize("command", [["explain", "1"], ["explain", "1", "--json"], ["status"]])
def test_explain_and_status_from_a_journal_load_no_compiled_core(journal: Path, command: list[str]) -> None:
    # The priority terms are stored with the queue rows, so nothing needs numba or numpy; the
    # other command modules (simulator, collectors, models) are not imported either.
    report = (
        f"[[m for m in {HEAVY!r} if m in sys.modules], "
        "sorted(m for m in sys.modules if m.startswith('rush.cli.') and m != 'rush.cli.main')]"
    )
    out = in_process([*command, "--journal", str(journal)], report)
    code, (heavy, cli_modules) = report_of(out)
    assert code == 0, out.stderr
    assert heavy == []
    assert cli_modules == ["rush.cli.app", "rush.cli.explain", "rush.cli.lean_options"]
    if command[0] == "explain":
        assert "LINEAR" in out.stdout and "wait" in out.stdout  # the stored terms were shown


def test_numba_is_configured_only_when_imported(tmp_path: Path) -> None:
    out = python(
        """
        import json, os, sys
        import rush
        before = bool(os.environ.get("NUMBA_CACHE_DIR"))  # "" here: unset
        from rush.jit_cache import skip_numba_blas_probe
        import rush.simulator.metrics as metrics
        import numpy as np
        skip_numba_blas_probe()
        # A kernel loaded: numba set up its typing context, with its cffi support off.
        slowdown = metrics.job_bounded_slowdown(100.0, 10.0, 10.0)
        import numba.core.typing.cffi_utils as cffi_support
        print(json.dumps([before, os.environ["NUMBA_CACHE_DIR"], slowdown, cffi_support.SUPPORTED,
                          "cffi" in sys.modules]))
        import cffi  # another library's import of cffi still works
        """,
        {"RUSH_CACHE_DIR": str(tmp_path), "NUMBA_CACHE_DIR": ""},
    )
    assert out.returncode == 0, out.stderr
    before, cache_dir, slowdown, supported, cffi_loaded = json.loads(out.stdout)
    assert before is False
    assert cache_dir.startswith(str(tmp_path / "numba" / "rush-kernels-"))
    assert slowdown == 10.0
    assert supported is False and cffi_loaded is False


def test_every_command_is_found_by_its_first_word() -> None:
    # rush.cli.main imports only the module named in COMMAND_MODULES: each module must define
    # exactly the commands mapped to it, or `rush <command>` would say "No such command".
    out = python(
        """
        import importlib, json
        from rush.cli.app import app
        from rush.cli.main import COMMAND_MODULES, GROUPS

        def names():
            return {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}

        found = {}
        for module in sorted(set(COMMAND_MODULES.values())):
            seen = names()
            importlib.import_module(f"rush.cli.{module}")
            for name in names() - seen:
                found[name] = module
            if module in GROUPS:
                found[module] = module
        print(json.dumps([found, COMMAND_MODULES]))
        """
    )
    assert out.returncode == 0, out.stderr
    found, mapped = json.loads(out.stdout)
    assert found == mapped


@pytest.mark.parametrize("command", ["explain", "status", "simulate", "trace", "probe", "experiment"])
def test_a_command_run_alone_has_the_same_help_as_in_the_whole_app(command: str) -> None:
    def help_text(entry: str) -> subprocess.CompletedProcess:
        return python(
            f"""
            import sys
            sys.argv = ["rush", {command!r}, "--help"]
            {entry}
            """,
            {"COLUMNS": "100"},
        )

    alone = help_text("from rush.cli.main import main; main()")  # only its module imported
    whole = help_text("from rush.cli.main import app; app()")  # every command module
    assert alone.returncode == whole.returncode == 0, alone.stderr + whole.stderr
    assert alone.stdout == whole.stdout and f"rush {command}" in alone.stdout


def test_simulate_loads_only_the_replay(tmp_path: Path) -> None:
    report = (
        "[sorted({m.split('.')[1] for m in sys.modules if m.startswith('rush.') and m.count('.') >= 1}), "
        "[m for m in ('sklearn', 'scipy.linalg', 'pandas', 'matplotlib', 'cffi') if m in sys.modules]]"
    )
    out = in_process(["simulate", "lublin:300:16:1", "--json"], report)
    code, (packages, heavy) = report_of(out)
    assert code == 0, out.stderr
    assert json.loads(out.stdout)["jobs"] == 300
    assert heavy == []
    for never in ("planner", "daemon", "collect", "rjms", "campaign", "flux_module", "studies"):
        assert never not in packages, never


def test_simulate_leaves_at_once_with_its_output_whole(tmp_path: Path) -> None:
    # The replay ends with os._exit (no interpreter teardown): its stdout, --jobs-out and --out
    # are whole, the exit code is the command's, and a run saved this way reads back.
    jobs, run = tmp_path / "jobs.csv", tmp_path / "run"
    out = rush("simulate", "lublin:300:16:1", "--json", "--jobs-out", str(jobs), "--out", str(run))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["jobs"] == 300
    assert len(jobs.read_text().splitlines()) == 301
    from rush.simulator.runs import load_metrics, load_runs

    (saved,) = load_runs(run).values()
    assert len(saved.start) == 300
    (metrics,) = load_metrics(run).values()
    assert metrics["awrt"] == pytest.approx(json.loads(out.stdout)["awrt"])


@pytest.mark.parametrize("lean", ["", "0"])
def test_simulate_loads_its_kernels_without_numbas_numpy_modules(tmp_path: Path, lean: str) -> None:
    # A cached kernel's environments name numba's modules (numba.np.arraymath, arrayobj): with
    # the start-up trims they are not imported to load it (RUSH_LEAN_NUMBA=0: they are), and the
    # replay's output is the same. The first run may compile (and import everything).
    report = "[m for m in ('numba.np.arraymath', 'numba.np.arrayobj', 'scipy.linalg') if m in sys.modules]"
    env = {"RUSH_LEAN_NUMBA": lean}
    argv = ["simulate", "lublin:300:16:1", "--json", "--jobs-out"]
    first = in_process([*argv, str(tmp_path / "first.csv")], report, env)
    assert first.returncode == 0, first.stderr
    second = in_process([*argv, str(tmp_path / "second.csv")], report, env)
    code, loaded = report_of(second)
    assert code == 0, second.stderr
    assert loaded == ([] if lean != "0" else ["numba.np.arraymath", "numba.np.arrayobj"])
    assert (tmp_path / "second.csv").read_bytes() == (tmp_path / "first.csv").read_bytes()


def test_a_kernel_compiled_after_a_lean_load_gets_numbas_numpy_modules_without_the_blas_probe() -> None:
    # After the replay's kernels load without numba.np.arraymath, a kernel compiled in the same
    # process (np.argsort, np.dot) still works: numba imports the module then, and without its
    # BLAS probe (scipy.linalg comes only with np.dot's own compile).
    out = python(
        """
        import json, sys
        import numpy as np
        import rush.simulator.metrics as metrics
        from rush.jit_cache import skip_numba_blas_probe_when_imported
        skip_numba_blas_probe_when_imported()
        metrics.job_bounded_slowdown(100.0, 10.0, 10.0)  # compiled or loaded
        import numba

        @numba.njit
        def order(a):
            return np.argsort(a)

        first = order(np.array([3.0, 1.0, 2.0])).tolist()
        probe_skipped = "numba.np.arraymath" in sys.modules and "scipy.linalg" not in sys.modules

        @numba.njit
        def dot(a):
            return np.dot(a, a)

        print(json.dumps([first, probe_skipped, dot(np.arange(3.0))]))
        """
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [[1, 2, 0], True, 5.0]


def test_leaving_at_once_waits_for_other_threads() -> None:
    # With another thread alive the process takes the normal way out (which waits for it).
    out = python(
        """
        import threading
        from rush.cli.main import leave_at_once
        release = threading.Event()
        worker = threading.Thread(target=release.wait)
        worker.start()
        leave_at_once(0)
        print("returned")
        release.set()
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["returned"]


def test_warmup_prunes_only_caches_idle_for_two_weeks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Several checkouts share ~/.cache/rush/numba: a warmup in one must keep the others' kernels.
    from rush.jit_cache import CACHE_PREFIX, PRUNE_AFTER_IDLE_DAYS, mark_cache_used, prune_old_caches

    now = 2_000_000_000.0
    current, in_use, idle, unmarked_old, unmarked_new = (
        tmp_path / f"{CACHE_PREFIX}{name}" for name in ("current", "inuse", "idle", "oldfiles", "newfiles")
    )
    for directory in (current, in_use, idle, unmarked_old, unmarked_new):
        (directory / "rush").mkdir(parents=True)
        (directory / "rush" / "k.nbi").write_bytes(b"x")
    day = 86400.0
    mark_cache_used(in_use, now=now - (PRUNE_AFTER_IDLE_DAYS - 1) * day)
    mark_cache_used(idle, now=now - (PRUNE_AFTER_IDLE_DAYS + 1) * day)
    old = now - 30 * day
    for path in (unmarked_old, unmarked_old / "rush", unmarked_old / "rush" / "k.nbi"):
        os.utime(path, (old, old))
    for path in (unmarked_new, unmarked_new / "rush", unmarked_new / "rush" / "k.nbi"):
        os.utime(path, (now - day, now - day))
    (tmp_path / "not-a-cache").mkdir()
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(current))
    removed = prune_old_caches(now=now)
    assert sorted(p.name for p in removed) == sorted([idle.name, unmarked_old.name])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [current.name, in_use.name, unmarked_new.name, "not-a-cache"]
    )


def test_marking_a_cache_writes_at_most_once_an_hour(tmp_path: Path) -> None:
    from rush.jit_cache import last_used, mark_cache_used

    mark_cache_used(tmp_path, now=1000.0)
    assert last_used(tmp_path) == 1000.0
    mark_cache_used(tmp_path, now=1000.0 + 60)  # within the hour: no write
    assert last_used(tmp_path) == 1000.0
    mark_cache_used(tmp_path, now=1000.0 + 7200)
    assert last_used(tmp_path) == 8200.0


@pytest.mark.parametrize("command", [["explain", "1"], ["status"]])
def test_explain_and_status_import_no_pydantic(journal: Path, command: list[str]) -> None:
    # typer's pydantic adapters are built only for values that need converting (rush.cli.lean_options).
    out = in_process([*command, "--journal", str(journal)], "'pydantic' in sys.modules")
    assert report_of(out) == (0, False), out.stderr


def test_simulate_options_need_no_pydantic(tmp_path: Path) -> None:
    argv = ["simulate", "lublin:300:16:1", "--json", "--procs", "32", "--out", str(tmp_path / "run")]
    out = in_process(argv, "'pydantic' in sys.modules")
    assert report_of(out) == (0, False), out.stderr
    assert json.loads(out.stdout.splitlines()[0])["settings"]["procs"] == 32  # "32" became 32


def test_lean_options_convert_as_typer_does(tmp_path: Path) -> None:
    # Every option of simulate, compare, explain and status, given typical and bad values: the
    # lean conversion gives what typer's own (pydantic) one gives, value and type, or the same error.
    pytest.importorskip("typer._coercion", reason="a typer without runtime params: lean_options does nothing")
    existing = tmp_path / "file.txt"
    existing.write_text("x")
    values = [None, "", "0", "12", "007", "-3", "+4", " 5", "1_000", "9" * 30, "1.5", "1e1", "abc", "FCFS",
              "/nonexistent/x", str(existing), str(tmp_path), 7, 2.5, True]  # fmt: skip
    out = python(
        f"""
        import json, typer.main
        from typer._coercion import build_runtime_param
        from rush.cli.main import register
        from rush.cli.lean_options import _LeanRuntimeParam

        def outcome(runtime, value, param, ctx):
            try:
                got = runtime.coerce(value, param=param, ctx=ctx)
            except Exception as exc:
                return ["error", type(exc).__name__, str(exc)]
            return ["value", type(got).__name__, repr(got)]

        group = typer.main.get_command(register(["simulate", "explain"]))
        checked, lean, differ = 0, 0, []
        for name in ("simulate", "compare", "explain", "status"):
            command = group.commands[name]
            ctx = command.make_context(name, [], resilient_parsing=True)
            for param in command.params:
                if not hasattr(param, "get_runtime_param"):
                    continue
                runtime = param.get_runtime_param()
                lean += isinstance(runtime, _LeanRuntimeParam)
                for value in {values!r}:
                    ours = outcome(runtime, value, param, ctx)
                    typers = outcome(build_runtime_param(param.type_descriptor), value, param, ctx)
                    checked += 1
                    if ours != typers:
                        differ.append([name, param.name, repr(value), ours, typers])
        print(json.dumps([checked, lean, differ]))
        """
    )
    assert out.returncode == 0, out.stderr
    checked, lean, differ = json.loads(out.stdout)
    assert lean > 20 and checked > 500
    assert differ == []


def test_numba_is_imported_without_scipy_and_yaml_unless_a_numba_config_file_needs_it(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import json, sys
        import rush, numba
        print(json.dumps([numba.config.BOUNDSCHECK, "scipy" in sys.modules, "yaml" in sys.modules]))
        """
    )
    env = {**os.environ, "NUMBA_BOUNDSCHECK": ""}
    env.pop("NUMBA_BOUNDSCHECK")

    def run() -> list:
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    boundscheck, scipy_loaded, yaml_loaded = run()
    assert not scipy_loaded and not yaml_loaded and boundscheck != 1
    # numba reads a .numba_config.yaml in the working directory with PyYAML: it still does.
    (tmp_path / ".numba_config.yaml").write_text("boundscheck: 1\n")
    assert run() == [1, False, True]


@pytest.mark.parametrize("lean", ["", "0"])
def test_cached_kernels_load_without_numba_registries_and_compiling_still_works(
    tmp_path: Path, lean: str
) -> None:
    # RUSH_LEAN_NUMBA=0 turns the trims off: the cached kernel is loaded as numba loads it.
    # The first process compiles a kernel into an empty cache; the second loads it from there
    # without loading numba's typing and lowering registries (one of them: polynomials) nor
    # parsing its bitcode, then compiles a kernel that needs them (a typed list, np.random) and
    # one that calls the loaded kernel (its bitcode linked in).
    code = """
        import json, sys
        import rush.simulator.metrics as metrics
        from rush.jit_cache import skip_numba_blas_probe
        skip_numba_blas_probe()
        slowdown = metrics.job_bounded_slowdown(100.0, 10.0, 10.0)
        loaded_registries = "numba.np.polynomial.polynomial_core" in sys.modules
        import numba, numpy as np
        from numba.typed import List

        @numba.njit
        def draws(n):
            out = List()
            np.random.seed(1)
            for _ in range(n):
                out.append(np.random.random())
            return len(out)

        @numba.njit
        def twice(wait, run, tau):  # links the cached kernel's library into a new one
            return 2.0 * metrics.job_bounded_slowdown(wait, run, tau)

        hits = sum(metrics.job_bounded_slowdown._cache_hits.values())
        print(json.dumps([slowdown, loaded_registries, draws(3), twice(100.0, 10.0, 10.0), hits]))
        """
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "numba"), "RUSH_LEAN_NUMBA": lean}
    first = python(code, env)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == [10.0, True, 3, 20.0, 0]  # compiled: numba loaded everything
    second = python(code, env)
    assert second.returncode == 0, second.stderr
    # loaded from the cache: lean unless turned off
    assert json.loads(second.stdout) == [10.0, lean == "0", 3, 20.0, 1]


def test_the_remembered_kernel_digest_follows_every_edit(tmp_path: Path) -> None:
    # Each process names numba's cache directory after the kernel sources' digest, remembered
    # per state of the sources (paths, sizes, modification times) instead of hashing them all.
    import shutil

    import rush
    from rush.jit_cache import DIGESTS_DIR, kernel_sources_digest, remembered_sources_digest

    copy, base = tmp_path / "rush", tmp_path / "cache"
    shutil.copytree(Path(rush.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    first = remembered_sources_digest(base, copy)
    assert first == kernel_sources_digest(copy)
    assert remembered_sources_digest(base, copy) == first and len(list((base / DIGESTS_DIR).iterdir())) == 1
    # An edit of the same size (a kernel's constant) is a new state, with the new digest.
    backfill = copy / "core" / "easy.py"
    text = backfill.read_text()
    assert "out.backfilled[ns] = True" in text
    backfill.write_text(text.replace("out.backfilled[ns] = True", "out.backfilled[ns] = Fals"))
    later = backfill.stat().st_mtime_ns + 1_000_000_000
    os.utime(backfill, ns=(later, later))
    edited = remembered_sources_digest(base, copy)
    assert edited == kernel_sources_digest(copy) != first
    # A memo that is not a digest is recomputed, not trusted.
    for memo in (base / DIGESTS_DIR).iterdir():
        memo.write_text("not a digest")
    assert remembered_sources_digest(base, copy) == edited
