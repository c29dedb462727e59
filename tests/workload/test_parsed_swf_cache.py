"""The parsed-SWF cache (rush.workload.parsed_swf_cache): a read from the cache is the read of
the file, and an entry is never used for other content, another parser or when damaged."""

from __future__ import annotations

import gzip
import hashlib
import os
import random
import threading
from pathlib import Path

import numpy as np
import pytest

from rush.errors import ConfigError, TraceFormatError
from rush.workload import parsed_swf_cache, swf
from rush.workload.swf import read_swf
from tests.rush_cli import rush

HEADER = "; Version: 2.2\n; MaxProcs: 128\n; Note: a long\n;   continued note\n"


def job_line(job: int, runtime: int, rng: random.Random | None = None) -> str:
    procs, wait, mem = (rng.randint(1, 128), rng.randint(0, 99999), rng.random()) if rng else (4, 5, 0.5)
    return f"{job} {job * 10} {wait} {runtime} {procs} -1 {mem} {procs} {runtime * 2} -1 1 {job % 7} 1 1 1 -1 -1 -1\n"


def write_trace(path: Path, jobs: int = 3000, runtime: int = 100, extra: str = "") -> Path:
    """An SWF file above the cache's size threshold (gzip when the name ends in .gz)."""
    rng = random.Random(7)
    text = HEADER + "".join(job_line(j, runtime + j % 50, rng) for j in range(1, jobs + 1)) + extra
    data = text.encode()
    if path.suffix == ".gz":
        data = gzip.compress(data)
    path.write_bytes(data)
    assert path.stat().st_size >= parsed_swf_cache.MIN_CACHED_BYTES
    return path


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RUSH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RUSH_PARSE_CACHE", raising=False)
    return tmp_path / "cache" / "parsed-swf"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the parser's runs (a read from the cache does not run it)."""
    count: list[int] = []
    parse = swf._parse

    def counted(raw: bytes):
        count.append(len(raw))
        return parse(raw)

    monkeypatch.setattr(swf, "_parse", counted)
    return count


def same_trace(a, b) -> None:
    assert list(a.columns) == list(b.columns)
    for name in a.columns:
        assert a[name].dtype == b[name].dtype, name
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert (a.header, a.header_lines, a.skipped, a.malformed_lines, a.name, a.source) == (
        b.header,
        b.header_lines,
        b.skipped,
        b.malformed_lines,
        b.name,
        b.source,
    )


@pytest.mark.parametrize("name", ["trace.swf", "trace.swf.gz"])
def test_a_cached_read_is_the_files_read(tmp_path: Path, cache: Path, parses: list[int], name: str) -> None:
    path = write_trace(tmp_path / name, extra="12 bad line\n")
    first = read_swf(path)
    assert len(parses) == 1 and len(list(cache.glob("*.npy"))) == 1
    second = read_swf(path)
    assert len(parses) == 1  # from the cache
    uncached = read_swf(path, cache=False)
    assert len(parses) == 2
    same_trace(second, uncached)
    same_trace(first, uncached)
    assert second.skipped == {"malformed": 1} and second.header["Note"] == "a long continued note"


def test_an_edited_trace_is_parsed_again(tmp_path: Path, cache: Path, parses: list[int]) -> None:
    path = write_trace(tmp_path / "trace.swf", runtime=100)
    assert read_swf(path)["runtime"][0] == 101
    write_trace(path, runtime=200)  # same path, same size: only the content says it changed
    edited = read_swf(path)
    assert len(parses) == 2
    assert edited["runtime"][0] == 201
    same_trace(edited, read_swf(path, cache=False))


def test_another_parser_version_does_not_use_the_entry(
    tmp_path: Path, cache: Path, parses: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_trace(tmp_path / "trace.swf")
    read_swf(path)
    (old,) = cache.glob("*.npy")
    monkeypatch.setattr(parsed_swf_cache, "_digest", "0" * 16)  # as if swf.py had been edited
    read_swf(path)
    assert len(parses) == 2
    (new,) = cache.glob("*.npy")  # the stale entry was removed
    assert new != old and new.name.endswith("-" + "0" * 16 + ".npy")
    other = write_trace(tmp_path / "other.swf", runtime=300)
    read_swf(other)
    assert len(list(cache.glob("*.npy"))) == 2  # another trace's entry stays beside it


@pytest.mark.parametrize("damage", ["truncate", "flip", "meta", "not-ours"])
def test_a_damaged_entry_is_refused_and_rebuilt(
    tmp_path: Path, cache: Path, parses: list[int], damage: str
) -> None:
    path = write_trace(tmp_path / "trace.swf")
    expected = read_swf(path, cache=False)
    read_swf(path)
    (entry,) = cache.glob("*.npy")
    data = bytearray(entry.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[-100] ^= 0xFF  # a float's bytes: the shapes still match, the CRC does not
    elif damage == "meta":
        data = data.replace(b'"n_bad": 0', b'"n_bad": 7')
        data = data.replace(b'"file_sha256": "', b'"file_sha256": "0', 1)
    else:
        data = b"PK\x03\x04" + data
    entry.write_bytes(bytes(data))
    assert parsed_swf_cache.load(entry.name.split("-")[0]) is None
    again = read_swf(path)
    assert len(parses) == 3  # parsed, not loaded
    same_trace(again, expected)
    read_swf(path)  # the rewritten entry is good
    assert len(parses) == 3


def test_small_files_and_the_switch_off_are_not_cached(
    tmp_path: Path, cache: Path, parses: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    small = tmp_path / "small.swf"
    small.write_text(HEADER + job_line(1, 10))
    read_swf(small)
    read_swf(small)
    assert len(parses) == 2 and not cache.exists()
    monkeypatch.setenv("RUSH_PARSE_CACHE", "0")
    big = write_trace(tmp_path / "big.swf")
    read_swf(big)
    read_swf(big)
    assert len(parses) == 4 and not cache.exists()


def test_strict_errors_are_the_same_from_the_cache(tmp_path: Path, cache: Path) -> None:
    path = write_trace(tmp_path / "trace.swf", extra="5 not numbers\n")
    with pytest.raises(TraceFormatError) as uncached:
        read_swf(path, strict=True, cache=False)
    read_swf(path)  # fills the cache
    with pytest.raises(TraceFormatError) as cached:
        read_swf(path, strict=True)
    assert (cached.value.message, cached.value.where) == (uncached.value.message, uncached.value.where)
    assert cached.value.where == f"{path}:{HEADER.count(chr(10)) + 3001}"


def test_a_lowered_decompression_limit_still_refuses(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_trace(tmp_path / "trace.swf.gz")
    read_swf(path)
    monkeypatch.setenv("RUSH_MAX_TRACE_BYTES", "1000")
    with pytest.raises(TraceFormatError, match="decompresses to more than 1000 bytes"):
        read_swf(path)


def test_an_unwritable_cache_is_no_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("RUSH_CACHE_DIR", str(blocker))  # mkdir under a file fails
    path = write_trace(tmp_path / "trace.swf")
    same_trace(read_swf(path), read_swf(path, cache=False))


@pytest.mark.parametrize("value", ["maybe", "2", "true", " 0", "01"])
def test_a_wrong_switch_value_is_a_configuration_error(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    # Not a guess either way: the error names the variable and the values it takes, on any file.
    monkeypatch.setenv("RUSH_PARSE_CACHE", value)
    small = tmp_path / "small.swf"
    small.write_text(HEADER + job_line(1, 10))
    for path in (write_trace(tmp_path / "big.swf"), small):
        with pytest.raises(ConfigError, match="RUSH_PARSE_CACHE must be 0 or 1") as refused:
            read_swf(path)
        assert refused.value.where == "RUSH_PARSE_CACHE" and "RUSH_PARSE_CACHE=0" in refused.value.fix
    assert not cache.exists()


def test_the_command_line_exits_2_on_a_wrong_switch_value(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "big.swf")
    env = {"RUSH_CACHE_DIR": str(tmp_path / "cache"), "RUSH_PARSE_CACHE": "maybe"}
    done = rush("trace", "info", str(path), env=env)
    assert done.returncode == 2, done.stderr
    assert "RUSH_PARSE_CACHE" in done.stderr and not done.stdout
    done = rush("trace", "info", str(path), env=env | {"RUSH_PARSE_CACHE": ""})  # empty: on
    assert done.returncode == 0, done.stderr
    assert list((tmp_path / "cache" / "parsed-swf").glob("*.npy"))


def test_an_empty_switch_leaves_the_cache_on(
    tmp_path: Path, cache: Path, parses: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUSH_PARSE_CACHE", "")
    path = write_trace(tmp_path / "trace.swf")
    same_trace(read_swf(path), read_swf(path))
    assert len(parses) == 1 and len(list(cache.glob("*.npy"))) == 1


def test_a_cache_directory_that_is_a_file_only_costs_a_parse(
    tmp_path: Path, parses: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # RUSH_CACHE_DIR names a regular file: nothing can be read or written under it (for root too).
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("RUSH_CACHE_DIR", str(blocker))
    monkeypatch.delenv("RUSH_PARSE_CACHE", raising=False)
    path = write_trace(tmp_path / "trace.swf")
    same_trace(read_swf(path), read_swf(path, cache=False))
    read_swf(path)
    assert len(parses) == 3 and blocker.read_text() == "x"


def test_an_entry_that_is_a_fifo_is_not_waited_on(tmp_path: Path, cache: Path, parses: list[int]) -> None:
    # A FIFO in the entry's place: opened for reading it would wait for a writer for ever.
    path = write_trace(tmp_path / "trace.swf")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    cache.mkdir(parents=True)
    os.mkfifo(parsed_swf_cache.entry_path(digest))
    done: list[object] = []
    reader = threading.Thread(target=lambda: done.append(read_swf(path)), daemon=True)
    reader.start()
    reader.join(timeout=120)
    if reader.is_alive():  # unblock the reader before failing
        os.close(os.open(parsed_swf_cache.entry_path(digest), os.O_WRONLY | os.O_NONBLOCK))
        reader.join(timeout=120)
        pytest.fail("the read waited on a FIFO in the cache")
    same_trace(done[0], read_swf(path, cache=False))
    assert len(parses) == 2
    assert parsed_swf_cache.entry_path(digest).is_file()  # rewritten as a regular entry
    assert parsed_swf_cache.load(digest) is not None
