"""Outputs are renamed into place, and a rename replaces whatever the name held: run as root,
the fuzzer's 'rush trace convert t.swf /dev/zero' turned /dev/zero into a trace file (round 31).
Every writer renames through rush.output_file.replace_file, which refuses an existing output
that is not a regular file; a FIFO stands in for the device here."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from rush.errors import ConfigError, OutputError
from rush.output_file import check_output, replace_file


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def test_check_output_passes_absent_and_regular_files(tmp_path):
    check_output(tmp_path / "absent.txt")
    (tmp_path / "file.txt").write_text("x")
    check_output(tmp_path / "file.txt")


def test_check_output_refuses_a_fifo_and_a_directory_with_the_callers_error(tmp_path):
    fifo = _fifo(tmp_path / "out")
    with pytest.raises(OutputError, match="not a regular file") as caught:
        check_output(fifo)
    assert caught.value.where == str(fifo) and caught.value.fix
    with pytest.raises(ConfigError, match="not a regular file") as caught:
        check_output(tmp_path, ConfigError, "--out here")
    assert caught.value.where == "--out here"


def test_replace_file_replaces_a_regular_file(tmp_path):
    target, temporary = tmp_path / "out.txt", tmp_path / "out.txt.tmp"
    target.write_text("old")
    temporary.write_text("new")
    replace_file(temporary, target)
    assert target.read_text() == "new" and not temporary.exists()


def test_replace_file_leaves_a_fifo_and_removes_its_temporary(tmp_path):
    fifo, temporary = _fifo(tmp_path / "out"), tmp_path / "out.tmp"
    temporary.write_text("new")
    with pytest.raises(OutputError, match="not a regular file"):
        replace_file(temporary, fifo)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def _study_cache(path: Path) -> None:
    from rush.studies.study_cache import store_entry

    store_entry(path, {"a": 1})


def _sweep_description(path: Path) -> None:
    from rush.studies.sweep.table import write_description

    write_description(path, {"a": 1})


def _contention_records(path: Path) -> None:
    from rush.contention.campaign import filter_records
    from rush.models.variability.dataset import FORMAT

    source = path.with_name("records.jsonl")
    source.write_text(json.dumps({"format": FORMAT}) + "\n")
    filter_records(source, path, ())


@pytest.mark.parametrize("writer", [_study_cache, _sweep_description, _contention_records])
def test_writers_without_an_earlier_check_never_replace_a_fifo(tmp_path, writer):
    """Writers that checked nothing before the rename (study cache, sweep tables, contention
    records): refused at the rename, the FIFO left as it was, no temporary left behind."""
    fifo = _fifo(tmp_path / "out")
    with pytest.raises(OutputError, match="not a regular file"):
        writer(fifo)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("out") and p.name != "out"]
