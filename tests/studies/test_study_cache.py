"""The studies' walk-forward cache: a pickle is loaded only after the model files' trust check,
and no study script unpickles anything but through it."""

from __future__ import annotations

import ast
import os
import pickle
from collections import OrderedDict
from pathlib import Path

import pytest

from rush.studies.study_cache import cache_folder, load_entry, store_entry, trusted_folder

ROOT = Path(__file__).resolve().parents[2]


class Marker:
    """Unpickling this writes a file: the proof that a pickle's code ran."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.write_text, (self.path, "ran"))


def test_round_trip_and_mode(tmp_path: Path) -> None:
    entry = tmp_path / "cache" / "KTH-SP2-0123.pkl"
    store_entry(entry, {"weeks": [1, 2, 3]})
    assert load_entry(entry) == {"weeks": [1, 2, 3]}
    assert not entry.stat().st_mode & 0o022
    assert not entry.with_suffix(".tmp").exists()


@pytest.mark.parametrize("place", ["file", "folder"])
def test_entry_others_could_replace_is_refused_before_unpickling(
    tmp_path: Path, place: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    entry = folder / "SDSC-BLUE-0123.pkl"
    ran = tmp_path / "ran"
    entry.write_bytes(pickle.dumps(Marker(ran)))
    os.chmod(entry if place == "file" else folder, 0o666 if place == "file" else 0o777)
    with pytest.raises(SystemExit) as exit_info:
        load_entry(entry)
    assert exit_info.value.code == 2
    assert "chmod go-w" in capsys.readouterr().err
    assert not ran.exists()


@pytest.mark.parametrize("cut", [0, 1, 0.5, -1])
def test_a_truncated_entry_is_a_clear_exit_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cut: float
) -> None:
    entry = tmp_path / "cache" / "CTC-SP2-0123.pkl"
    store_entry(entry, {"weeks": list(range(1000))})
    whole = entry.read_bytes()
    entry.write_bytes(whole[: int(len(whole) * cut) if isinstance(cut, float) else cut])
    with pytest.raises(SystemExit) as exit_info:
        load_entry(entry)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert str(entry) in err and f"rm {entry}" in err


def test_an_entry_of_a_class_that_no_longer_exists_is_a_clear_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = tmp_path / "KTH-SP2-0123.pkl"
    store_entry(entry, OrderedDict(weeks=[1, 2]))
    # the same pickle naming a class its module no longer has (a renamed class)
    entry.write_bytes(entry.read_bytes().replace(b"OrderedDict", b"OrderedGone"))
    with pytest.raises(SystemExit) as exit_info:
        load_entry(entry)
    assert exit_info.value.code == 2
    assert "cannot be read" in capsys.readouterr().err


def test_cache_folder_follows_rush_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RUSH_CACHE", str(tmp_path))
    assert cache_folder("runtime_quantiles") == tmp_path / "runtime_quantiles"


UNPICKLERS = {("pickle", "load"), ("pickle", "loads"), ("joblib", "load")}


def test_no_study_script_unpickles_by_itself() -> None:
    found = []
    for script in sorted([*ROOT.glob("sim/**/*.py"), *ROOT.glob("benchmarks/**/*.py")]):
        for node in ast.walk(ast.parse(script.read_text(), filename=str(script))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if (node.value.id, node.attr) in UNPICKLERS:
                    found.append(f"{script.relative_to(ROOT)}:{node.lineno}")
    assert not found, f"unpickled outside rush.studies.study_cache: {found}"


def test_a_memory_cache_folder_others_could_write_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RUSH_CACHE", str(tmp_path))
    assert trusted_folder("runtime_classes") == tmp_path / "runtime_classes"  # absent: nothing to check
    folder = tmp_path / "runtime_classes"
    folder.mkdir()
    assert trusted_folder("runtime_classes") == folder
    os.chmod(folder, 0o777)
    with pytest.raises(SystemExit):
        trusted_folder("runtime_classes")
    assert "chmod go-w" in capsys.readouterr().err
