"""Hostile ``rush trace`` flags, ``lublin:`` specs and catalogue names.

Every bad value is refused before any work starts with a RushError naming the flag (the CLI's
``main`` turns it into exit status 2), or by the command-line parser itself (exit 2, usage):
never a traceback, a numpy error, or hours of generation.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rush.cli.main import app
from rush.errors import RushError, TraceFormatError, TraceNotFoundError
from rush.hashing import file_sha256
from rush.workload import catalogue
from rush.workload.catalogue import load_trace, parse_lublin_spec
from rush.workload.lublin import lublin_generate
from rush.workload.resample import resample_weekly
from tests.workload.helpers import GOOD, MIRROR

# (id, arguments after "rush trace", text the error names); {out} is a path in tmp_path.
FLAG_CASES = [
    ("synth-seed-negative", ["synth", "--seed", "-1", "--out", "{out}"], "--seed"),
    ("synth-seed-2^64", ["synth", "--seed", str(2**64), "--out", "{out}"], "--seed"),
    ("synth-jobs-zero", ["synth", "--jobs", "0", "--out", "{out}"], "--jobs"),
    ("synth-jobs-negative", ["synth", "--jobs", "-5", "--out", "{out}"], "--jobs"),
    ("synth-jobs-huge", ["synth", "--jobs", str(10**12), "--out", "{out}"], "--jobs"),
    ("synth-procs-zero", ["synth", "--procs", "0", "--out", "{out}"], "--procs"),
    ("synth-procs-1e20", ["synth", "--procs", str(10**20), "--out", "{out}"], "--procs"),
    ("synth-types", ["synth", "--types", "quantum", "--out", "{out}"], "--types"),
    ("resample-weeks-zero", ["resample", "lublin:50:16", "--weeks", "0", "--out", "{out}"], "--weeks"),
    (
        "resample-weeks-huge",
        ["resample", "lublin:50:16", "--weeks", "100000000", "--out", "{out}"],
        "--weeks",
    ),
    (
        "resample-seed-negative",
        ["resample", "lublin:50:16", "--weeks", "2", "--seed", "-1", "--out", "{out}"],
        "--seed",
    ),
    ("info-procs-zero", ["info", "lublin:50:16", "--procs", "0"], "--procs"),
    ("info-procs-huge", ["info", "lublin:50:16", "--procs", str(2**40)], "--procs"),
    ("spec-negative-jobs", ["info", "lublin:-1"], "TRACE"),
    ("spec-superscript", ["info", "lublin:²"], "TRACE"),
    ("spec-huge-jobs", ["info", "lublin:99999999999"], "TRACE"),
    ("spec-huge-procs", ["info", f"lublin:10:{2**40}"], "TRACE"),
    ("spec-too-many-parts", ["info", "lublin:1:2:3:4"], "TRACE"),
    ("spec-zero-procs", ["info", "lublin:10:0"], "TRACE"),
    ("catalogue-traversal", ["fetch", "../../etc/passwd"], "TRACE"),
    ("catalogue-traversal-alias", ["fetch", "KTH-SP2/../../../x"], "TRACE"),
    ("catalogue-empty-name", ["fetch", ""], "TRACE"),
    ("convert-to-directory", ["convert", "lublin:20:8", "{dir}"], "{dir}"),
    ("convert-to-missing-dir", ["convert", "lublin:20:8", "{dir}/no/such/out.swf"], "out.swf"),
]


@pytest.mark.parametrize("args", [c[1] for c in FLAG_CASES], ids=[c[0] for c in FLAG_CASES])
def test_bad_flag_is_a_clear_error(tmp_path: Path, args: list[str], request):
    where = {c[0]: c[2] for c in FLAG_CASES}[request.node.callspec.id]
    fill = {"out": str(tmp_path / "out.swf"), "dir": str(tmp_path)}
    before = sorted(tmp_path.iterdir())
    result = CliRunner().invoke(app, ["trace", *(a.format(**fill) for a in args)])
    assert isinstance(result.exception, RushError), (result.output, result.exception)
    assert where.format(**fill) in str(result.exception) and "fix:" in str(result.exception)
    assert sorted(tmp_path.iterdir()) == before  # nothing written, not even a part file


@pytest.mark.parametrize(
    "args",
    [["synth", "--seed", "x"], ["synth", "--jobs", "1e3"], ["resample", "t", "--weeks", "two"]],
    ids=["seed-text", "jobs-float", "weeks-text"],
)
def test_non_integer_flags_are_usage_errors(args: list[str]):
    result = CliRunner().invoke(app, ["trace", *args, "--out", "/nonexistent/x.swf"])
    assert (
        result.exit_code == 2 and result.exception is not None and not isinstance(result.exception, RushError)
    )
    assert "Invalid value" in result.output or "is not a valid integer" in result.output


def test_library_functions_refuse_bad_seeds_and_sizes():
    with pytest.raises(RushError, match="seed"):
        lublin_generate(10, 16, seed=-1)
    with pytest.raises(RushError, match="bad synthetic workload size"):
        lublin_generate(10**12, 16)
    trace = lublin_generate(30, 16, seed=1)
    with pytest.raises(RushError, match="seed"):
        resample_weekly(trace, 2, seed=-3)
    with pytest.raises(RushError, match="weeks must be positive"):
        resample_weekly(trace, 10**9, seed=1)
    assert parse_lublin_spec("lublin:10:16:0") == (10, 16, 0)


def test_resample_memory_follows_jobs_not_the_users_span(tmp_path: Path):
    """One user's two jobs 2**53 s apart: 1.5e10 weekly slices were once materialised."""
    path = tmp_path / "far.swf"
    path.write_text(GOOD + f"4 {2**53} 1 30 2 -1 -1 2 60 -1 1 2 1 -1 1 -1 -1 -1\n")
    new = resample_weekly(load_trace(str(path)), 3, seed=1)
    assert 0 < len(new) <= 3 * 4


# ---------------------------------------------------------------- catalogue and mirror


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RUSH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RUSH_TRACE_MIRROR", raising=False)
    monkeypatch.setenv("RUSH_TRACE_BASE_URL", "http://127.0.0.1:9/none")  # never the network
    return tmp_path / "cache" / "traces"


NAME = "KTH-SP2-1996-2.1-cln.swf.gz"


@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/passwd", "KTH-SP2/../../../etc", "..", "\x00"])
def test_catalogue_names_never_reach_outside_the_cache(cache, name: str):
    with pytest.raises(TraceNotFoundError, match="neither a file nor a catalogue trace"):
        catalogue.fetch(name)
    assert not cache.exists() or list(cache.iterdir()) == []


def test_a_path_that_exists_is_read_as_a_trace_not_a_catalogue_name(cache, tmp_path):
    with pytest.raises(TraceFormatError, match="no jobs in the trace"):
        load_trace("/etc/passwd")


@pytest.mark.parametrize("kind", ["wrong-bytes", "empty", "fifo", "directory"])
def test_bad_mirror_copy_is_refused_and_nothing_stays_in_the_cache(cache, tmp_path, kind: str):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    target = mirror / NAME
    if kind == "wrong-bytes":
        target.write_bytes(b"\x1f\x8b not the trace")
    elif kind == "empty":
        target.write_bytes(b"")
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    with pytest.raises((TraceFormatError, TraceNotFoundError)) as err:
        catalogue.fetch("KTH-SP2", mirror=mirror)
    assert "fix:" in str(err.value)
    assert list(cache.iterdir()) == []  # neither the bad copy nor a .part file


def test_a_corrupt_cached_copy_is_replaced_from_the_mirror(cache, tmp_path):
    if not (MIRROR / NAME).exists():
        pytest.skip("no trace mirror: set RUSH_TRACE_MIRROR")
    cache.mkdir(parents=True)
    (cache / NAME).write_bytes(b"truncated")
    path = catalogue.fetch("KTH-SP2", mirror=MIRROR)
    assert file_sha256(path) == catalogue.lookup(NAME).sha256
    assert sorted(p.name for p in cache.iterdir()) == [NAME]
    shutil.rmtree(cache)


@pytest.mark.parametrize("spec", ["/tmp/" + "x" * 300 + "/t.swf", "x" * 300, "~no-such-user-rfuzz/t.swf"])
def test_a_path_stat_cannot_answer_for_is_no_such_trace(spec: str):
    """A name over NAME_MAX (ENAMETOOLONG) or ~ of an unknown user: TraceNotFoundError, not an
    OSError/RuntimeError traceback (found by fuzzing)."""
    with pytest.raises(TraceNotFoundError, match="no such trace file|neither a file nor a catalogue"):
        load_trace(spec)


@pytest.mark.parametrize(
    "output", ["", ".", "x" * 300, "x" * 300 + ".gz"], ids=["empty", "dot", "long", "long-gz"]
)
def test_convert_to_an_output_path_that_names_no_writable_file(tmp_path: Path, output: str, monkeypatch):
    """Found by fuzzing: '' (Path('.')) raised ValueError in with_name, and a name over NAME_MAX
    raised OSError again from the cleanup of the .part file; both are a TraceFormatError now."""
    source = tmp_path / "t.swf"
    source.write_text(GOOD)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["trace", "convert", str(source), output])
    assert isinstance(result.exception, TraceFormatError), repr(result.exception)
    assert "fix:" in str(result.exception)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.swf"]  # nothing left behind


def test_convert_never_replaces_a_device_or_fifo(tmp_path: Path):
    """Found by fuzzing, run as root: 'rush trace convert t.swf /dev/zero' renamed the trace over
    the device node (/dev/zero became a regular file). An output that exists and is not a
    regular file is refused, left as it was. A FIFO stands in for the device here."""
    source = tmp_path / "t.swf"
    source.write_text(GOOD)
    fifo = tmp_path / "out.swf"
    os.mkfifo(fifo)
    result = CliRunner().invoke(app, ["trace", "convert", str(source), str(fifo)])
    assert isinstance(result.exception, TraceFormatError), repr(result.exception)
    assert "not a regular file" in str(result.exception) and "fix:" in str(result.exception)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # still the FIFO, not a trace file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.swf", "t.swf"]
