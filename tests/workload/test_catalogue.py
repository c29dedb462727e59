"""Trace catalogue: mirror, cache, download from a local HTTP server, checksums, names."""

from __future__ import annotations

import csv
import functools
import http.server
import json
import shutil
import subprocess
import sys
import threading
from importlib import resources

import pytest

from rush.errors import ConfigError, TraceFormatError, TraceNotFoundError
from rush.hashing import file_sha256
from rush.workload import catalogue
from tests.workload.helpers import GOOD, MIRROR, manifest

NAME = "KTH-SP2-1996-2.1-cln.swf.gz"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RUSH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RUSH_TRACE_MIRROR", raising=False)
    monkeypatch.delenv("RUSH_TRACE_BASE_URL", raising=False)
    if not (MIRROR / NAME).exists():
        pytest.skip("no trace mirror: set RUSH_TRACE_MIRROR")
    return tmp_path / "cache" / "traces"


@pytest.fixture
def archive(tmp_path):
    """A local stand-in for the Parallel Workloads Archive: ``{base}/l_kth_sp2/NAME`` over HTTP."""
    site = tmp_path / "site"
    (site / "l_kth_sp2").mkdir(parents=True)
    shutil.copyfile(MIRROR / NAME, site / "l_kth_sp2" / NAME)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", site / "l_kth_sp2" / NAME
    finally:
        server.shutdown()
        server.server_close()


def test_manifest_is_a_copy_of_the_mirror_hashes():
    shared = manifest()
    text = resources.files("rush.data").joinpath("trace_manifest.tsv").read_text()
    ours = {row["file"]: row for row in csv.DictReader(text.splitlines(), delimiter="\t")}
    assert set(ours) == set(shared)
    for name, row in ours.items():
        assert (row["sha256"], row["bytes"], row["jobs"]) == (
            shared[name]["sha256"],
            shared[name]["bytes"],
            shared[name]["jobs"],
        )


def test_fetch_from_mirror_by_alias_and_cache_hit(cache, monkeypatch):
    monkeypatch.setenv("RUSH_TRACE_MIRROR", str(MIRROR))
    path = catalogue.fetch("kth-sp2")
    assert path == cache / NAME and path.read_bytes() == (MIRROR / NAME).read_bytes()
    assert sorted(p.name for p in cache.iterdir()) == [NAME]  # no temporary file left behind
    monkeypatch.setenv("RUSH_TRACE_MIRROR", "/nonexistent")
    assert catalogue.fetch(NAME) == path  # cached, verified, no mirror needed


def test_fetch_with_a_mirror_argument_replaces_a_corrupt_cached_copy(cache):
    cache.mkdir(parents=True)
    (cache / NAME).write_bytes(b"a stale partial download")
    path = catalogue.fetch("KTH-SP2", mirror=MIRROR)
    assert file_sha256(path) == catalogue.lookup(NAME).sha256


def test_download_over_http_is_verified(cache, archive, monkeypatch):
    base, served = archive
    path = catalogue.fetch("KTH-SP2", base_url=base)
    assert path.read_bytes() == served.read_bytes()
    # The environment variable works as well as the argument; a cache hit downloads nothing.
    monkeypatch.setenv("RUSH_TRACE_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    assert catalogue.fetch("KTH-SP2") == path
    # A corrupted archive copy is refused and not kept.
    path.unlink()
    served.write_bytes(b"not the trace")
    with pytest.raises(TraceFormatError, match="sha256 mismatch") as err:
        catalogue.fetch("KTH-SP2", base_url=base)
    assert err.value.where.endswith(f"/l_kth_sp2/{NAME}") and err.value.fix
    assert list(cache.iterdir()) == []


def test_download_errors_are_clear(cache, archive):
    base, _ = archive
    with pytest.raises(TraceNotFoundError, match="could not download") as err:
        catalogue.fetch("SDSC-SP2", base_url=base)  # 404
    assert "RUSH_TRACE_MIRROR" in err.value.fix
    with pytest.raises(TraceNotFoundError, match="not on the Parallel Workloads Archive") as err:
        catalogue.fetch("Lublin-256-10k", base_url=base)
    assert "lublin:10000:256" in err.value.fix


def test_corrupt_mirror_copy_is_refused(cache, tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / NAME).write_bytes(b"garbage")
    monkeypatch.setenv("RUSH_TRACE_MIRROR", str(mirror))
    with pytest.raises(TraceFormatError, match="sha256 mismatch"):
        catalogue.fetch(NAME)
    assert not (cache / NAME).exists()


@pytest.mark.parametrize("in_the_way", ["cache", "cache/traces"])
def test_a_regular_file_in_place_of_the_cache_directory_is_a_clear_error(cache, in_the_way, monkeypatch):
    # RUSH_CACHE_DIR itself a file, or its traces/ subdirectory: NotADirectoryError before.
    monkeypatch.setenv("RUSH_TRACE_MIRROR", str(MIRROR))
    blocker = cache.parents[1] / in_the_way
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("not a directory")
    with pytest.raises(ConfigError, match="cannot use the trace cache") as err:
        catalogue.fetch(NAME)
    assert err.value.where == str(cache) and "RUSH_CACHE_DIR" in err.value.fix
    assert blocker.read_text() == "not a directory"  # nothing overwritten
    run = subprocess.run(
        [sys.executable, "-m", "rush", "trace", "fetch", "KTH-SP2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert str(cache) in run.stderr and "RUSH_CACHE_DIR" in run.stderr


def test_file_sha256_is_the_manifest_digest(cache):
    assert file_sha256(MIRROR / NAME) == catalogue.lookup(NAME).sha256


def test_unknown_name_suggests_close_ones():
    with pytest.raises(TraceNotFoundError) as err:
        catalogue.lookup("KTH-SP9")
    assert "did you mean kth-sp2" in err.value.fix.lower()
    assert "SDSC-BLUE" in err.value.fix  # the full list of names


@pytest.mark.parametrize(
    ("name", "file"),
    [
        ("HPC2N", "HPC2N-2002-2.2-cln.swf.gz"),
        ("cea-curie", "CEA-Curie-2011-2.1-cln.swf.gz"),
        ("SDSC-BLUE", "SDSC-BLUE-2000-4.2-cln.swf.gz"),
        ("CTC-SP2", "CTC-SP2-1996-3.1-cln.swf.gz"),
        ("SDSC-SP2-1998-4.2-cln", "SDSC-SP2-1998-4.2-cln.swf.gz"),
        ("Lublin-256-10k", "Lublin-256-10k.swf.gz"),
        ("KTH-SP2-1996-2.1-cln.swf.gz", NAME),
    ],
)
def test_aliases(name, file):
    assert catalogue.lookup(name).file == file


def test_every_archive_trace_has_its_directory():
    for entry in catalogue.catalogue().values():
        if entry.file.startswith("Lublin"):
            assert entry.pwa_dir is None
        else:
            assert entry.pwa_dir is not None and entry.pwa_dir.startswith("l_")
    # The archive's directory names do not always follow the file names.
    assert catalogue.lookup("OSC-Clust").pwa_dir == "l_osc"
    assert catalogue.lookup("SDSC-SP2").pwa_dir == "l_sdsc_sp2"


def test_resolve_trace(tmp_path, cache, monkeypatch):
    local = tmp_path / "mine.swf"
    local.write_text(GOOD)
    assert catalogue.resolve_trace(str(local)) == local
    with pytest.raises(TraceNotFoundError, match="no such trace file"):
        catalogue.resolve_trace(str(tmp_path / "absent.swf"))
    with pytest.raises(TraceNotFoundError, match="neither a file nor a catalogue trace"):
        catalogue.resolve_trace("SDSC-SP3")
    monkeypatch.setenv("RUSH_TRACE_MIRROR", str(MIRROR))
    assert catalogue.resolve_trace("KTH-SP2") == cache / NAME


def test_load_trace_detects_the_format(tmp_path):
    swf = tmp_path / "a.swf"
    swf.write_text(GOOD)
    assert len(catalogue.load_trace(str(swf))) == 3
    acct = tmp_path / "acct.json"
    acct.write_text(json.dumps({"jobs": [{"job_id": 5, "time": {"submission": 10, "start": 20, "end": 30}}]}))
    assert catalogue.load_trace(str(acct))["job_id"].tolist() == [5]
    text = tmp_path / "acct.txt"
    text.write_text("JobID|Submit|Start|End\n9|2023-01-01T00:00:00|2023-01-01T00:01:00|2023-01-01T00:02:00\n")
    trace = catalogue.load_trace(str(text))
    assert trace["job_id"].tolist() == [9] and trace["runtime"].tolist() == [60]
    with pytest.raises(TraceFormatError, match="is a directory"):
        catalogue.load_trace(str(tmp_path))


def test_lublin_spec():
    assert catalogue.parse_lublin_spec("lublin") == (10_000, 256, 1)
    assert catalogue.parse_lublin_spec("Lublin:500") == (500, 256, 1)
    assert catalogue.parse_lublin_spec("lublin:500:64:3") == (500, 64, 3)
    assert catalogue.parse_lublin_spec("KTH-SP2") is None
    for bad in ("lublin:many", "lublin:0", "lublin:5:6:7:8", "lublin:10:-4"):
        with pytest.raises(TraceNotFoundError, match="bad synthetic spec"):
            catalogue.parse_lublin_spec(bad)
    trace = catalogue.load_trace("lublin:300:32:2")
    assert len(trace) == 300 and trace.max_procs == 32
    default = catalogue.load_trace("lublin")
    assert len(default) == 10_000 and default.max_procs == 256
