"""Trace catalogue: mirror, cache, download from a local HTTP server, checksums, names."""

from __future__ import annotations

import functools
import http.server
import shutil
import threading

import pytest

from rush.errors import TraceFormatError, TraceNotFoundError
from rush.workload import catalogue
from tests.workload.test_swf import MIRROR

NAME = "KTH-SP2-1996-2.1-cln.swf.gz"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RUSH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RUSH_TRACE_MIRROR", raising=False)
    if not (MIRROR / NAME).exists():
        pytest.skip("no trace mirror: set RUSH_TRACE_MIRROR")
    return tmp_path / "cache" / "traces"


def test_fetch_from_mirror_by_alias_and_cache_hit(cache, monkeypatch):
    monkeypatch.setenv("RUSH_TRACE_MIRROR", str(MIRROR))
    path = catalogue.fetch("kth-sp2")
    assert path == cache / NAME and path.exists()
    monkeypatch.setenv("RUSH_TRACE_MIRROR", "/nonexistent")
    assert catalogue.fetch(NAME) == path  # cached, verified, no mirror needed


def test_download_over_http_is_verified(cache, tmp_path, monkeypatch):
    site = tmp_path / "site" / "l_kth_sp2"
    site.mkdir(parents=True)
    shutil.copyfile(MIRROR / NAME, site / NAME)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "site"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        assert catalogue.fetch("KTH-SP2", base_url=base).exists()
        # A corrupted archive copy is refused and not kept.
        (cache / NAME).unlink()
        (site / NAME).write_bytes(b"not the trace")
        with pytest.raises(TraceFormatError, match="sha256 mismatch"):
            catalogue.fetch("KTH-SP2", base_url=base)
        assert not (cache / NAME).exists()
        with pytest.raises(TraceNotFoundError, match="could not download"):
            catalogue.fetch("SDSC-SP2", base_url=base)  # 404
    finally:
        server.shutdown()


def test_corrupt_mirror_copy_is_refused(cache, tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / NAME).write_bytes(b"garbage")
    monkeypatch.setenv("RUSH_TRACE_MIRROR", str(mirror))
    with pytest.raises(TraceFormatError, match="sha256 mismatch"):
        catalogue.fetch(NAME)


def test_unknown_name_suggests_close_ones():
    with pytest.raises(TraceNotFoundError) as err:
        catalogue.lookup("KTH-SP9")
    assert "kth-sp2" in str(err.value).lower() and "fix:" in str(err.value)


def test_aliases():
    assert catalogue.lookup("HPC2N").file == "HPC2N-2002-2.2-cln.swf.gz"
    assert catalogue.lookup("cea-curie").file == "CEA-Curie-2011-2.1-cln.swf.gz"


def test_lublin_spec():
    assert catalogue.parse_lublin_spec("lublin") == (10_000, 256, 1)
    assert catalogue.parse_lublin_spec("lublin:500:64:3") == (500, 64, 3)
    assert catalogue.parse_lublin_spec("KTH-SP2") is None
    with pytest.raises(TraceNotFoundError):
        catalogue.parse_lublin_spec("lublin:many")
    trace = catalogue.load_trace("lublin:300:32:2")
    assert len(trace) == 300 and trace.max_procs == 32
