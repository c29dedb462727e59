"""A model is a pickle: rush refuses one that anyone but root or its own user could have
written (the file, its card, or a directory above them), before unpickling it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import joblib
import pytest

from rush.errors import ModelError
from rush.models.persistence import sidecar_path
from rush.models.runtime_pipeline import load_runtime_model
from rush.models.trust import check_trusted
from rush.models.variability.train import load_variability_model
from tests.models.fixtures import save_trained

SHIPPED = Path(__file__).resolve().parents[2] / "models" / "variability.joblib"
OTHER_UID = 54321  # no account of this machine: someone else


@pytest.fixture
def model(tmp_path: Path) -> Path:
    """A runtime-class model in a 0755 directory, the files 0644 (a correct installation)."""
    directory = tmp_path / "models"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    path = directory / "m.joblib"
    save_trained(path)
    for file in (path, sidecar_path(path)):
        file.chmod(0o644)
    return path


@pytest.fixture
def no_unpickling(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("joblib.load reached for an untrusted model")

    monkeypatch.setattr(joblib, "load", never)


def test_a_correctly_owned_model_loads(model: Path) -> None:
    loaded, card = load_runtime_model(model)
    assert hasattr(loaded, "predict") and card["classes"] == [0, 1]


def test_a_model_file_others_can_write_is_refused(model: Path, no_unpickling: None) -> None:
    model.chmod(0o646)
    with pytest.raises(ModelError, match="the model file is writable by others") as err:
        load_runtime_model(model)
    assert err.value.where == str(model) and err.value.fix == f"chmod go-w {model}"


def test_a_card_the_group_can_write_is_refused(model: Path, no_unpickling: None) -> None:
    sidecar_path(model).chmod(0o664)
    with pytest.raises(ModelError, match="writable by group") as err:
        load_runtime_model(model)
    assert err.value.where == str(sidecar_path(model))


def test_a_model_directory_others_can_write_is_refused(model: Path, no_unpickling: None) -> None:
    model.parent.chmod(0o777)
    with pytest.raises(
        ModelError, match="a directory above the model is writable by group and others"
    ) as err:
        load_runtime_model(model)
    assert err.value.where == str(model.parent) and "chmod go-w" in err.value.fix


def test_a_directory_owned_by_someone_else_is_refused(model: Path, no_unpickling: None) -> None:
    os.chown(model.parent.parent, OTHER_UID, -1)
    with pytest.raises(ModelError, match=f"owned by uid {OTHER_UID}") as err:
        load_runtime_model(model)
    assert err.value.where == str(model.parent.parent) and err.value.fix.startswith("chown ")


def test_a_symlink_to_a_model_in_an_open_directory_is_refused(model: Path, tmp_path: Path) -> None:
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    shutil.copy(model, open_dir / "m.joblib")
    open_dir.chmod(0o777)
    link = model.parent / "link.joblib"
    link.symlink_to(open_dir / "m.joblib")
    with pytest.raises(ModelError, match="writable by group and others") as err:
        check_trusted(link)
    assert err.value.where == str(open_dir)


def test_a_sticky_world_writable_directory_above_is_accepted(model: Path) -> None:
    # /tmp's case: others may create entries but cannot replace the ones rush owns.
    model.parent.parent.chmod(0o1777)
    check_trusted(model, sidecar_path(model))
    model.parent.parent.chmod(0o1777 & ~0o1000)  # the same without the sticky bit: refused
    with pytest.raises(ModelError, match="writable by group and others"):
        check_trusted(model)


@pytest.mark.skipif(not SHIPPED.exists(), reason="models/variability.joblib is not in this checkout")
def test_the_variability_predictor_shares_the_check(tmp_path: Path, no_unpickling: None) -> None:
    for file in (SHIPPED, sidecar_path(SHIPPED)):
        shutil.copy(file, tmp_path / file.name)
    copy = tmp_path / SHIPPED.name
    copy.chmod(0o666)
    with pytest.raises(ModelError, match="the model file is writable by group and others"):
        load_variability_model(copy)
