"""Hostile model files: every case is refused with a ModelError naming the file (and the card
key), before any unpickling where the card or the checksum is wrong. Table-driven; the count
is asserted so the report's figure stays true."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import stat
from collections.abc import Callable
from pathlib import Path

import joblib
import pytest

from rush.errors import ModelError
from rush.models.persistence import sidecar_path
from rush.models.runtime_class import RuntimeClassifier
from rush.models.runtime_pipeline import load_runtime_model
from rush.planner.snapshot_builder import load_class_predictor
from tests.models.fixtures import save_trained, trained

REQUIRED = (
    "model",
    "features",
    "classes",
    "versions",
    "created",
    "sha256",
    "training_window",
    "divider",
    "mode",
    "estimator",
    "time_base",
    "user_key_kind",
)


def card(path: Path) -> dict:
    return json.loads(sidecar_path(path).read_text())


def write_card(path: Path, value) -> None:
    sidecar_path(path).write_text(json.dumps(value))


def edit(**changes) -> Callable[[Path], None]:
    """Set card keys (dotted for nested ones) to hostile values."""

    def apply(path: Path) -> None:
        c = card(path)
        for dotted, value in changes.items():
            *parents, last = dotted.split("__")
            target = c
            for p in parents:
                target = target[p]
            target[last] = value
        write_card(path, c)

    return apply


def drop(key: str) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        c = card(path)
        del c[key]
        write_card(path, c)

    return apply


def raw_card(data: bytes) -> Callable[[Path], None]:
    return lambda path: sidecar_path(path).write_bytes(data)


def replace_model(write: Callable[[Path], None]) -> Callable[[Path], None]:
    """Put something else in the model file and make the card's sha256 agree with it."""

    def apply(path: Path) -> None:
        write(path)
        c = card(path)
        c["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        write_card(path, c)

    return apply


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def model_is_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


def card_is_directory(path: Path) -> None:
    sidecar_path(path).unlink()
    sidecar_path(path).mkdir()


def card_of_another_model(path: Path) -> None:
    other = path.with_name("other.joblib")
    save_trained(other, trained(n=300))
    sidecar_path(path).write_text(sidecar_path(other).read_text())


def unfitted_pipeline(path: Path) -> None:
    model = trained().model
    from sklearn.base import clone

    joblib.dump(clone(model), path)


CASES: list[tuple[str, Callable[[Path], None], str]] = [
    # the card: wrong types and shapes
    ("features is 5", edit(features=5), "features"),
    ("features are numbers", edit(features=[1, 2, 3]), "features"),
    ("features empty", edit(features=[]), "features"),
    ("feature name 2 MB", edit(features=["x" * 2_000_000]), "larger than"),
    ("feature name 10 kB", edit(features=["x" * 10_000]), "features"),
    ("20,000 features", edit(features=["f"] * 20_000), "features"),
    ("classes a string", edit(classes="01"), "classes"),
    ("divider a string", edit(divider="600"), "divider"),
    ("divider negative", edit(divider=-5.0), "divider"),
    ("divider NaN", edit(divider=float("nan")), "divider"),
    ("divider infinite", edit(divider=float("inf")), "divider"),
    ("divider true", edit(divider=True), "divider"),
    ("sha256 not hex", edit(sha256="z" * 64), "sha256"),
    ("sha256 short", edit(sha256="ab"), "sha256"),
    ("sha256 upper case", lambda p: edit(sha256=card(p)["sha256"].upper())(p), "sha256"),
    ("sha256 a number", edit(sha256=12), "sha256"),
    ("model another kind", edit(model="variability"), "model"),
    ("mode unknown", edit(mode="daily"), "mode"),
    ("estimator 1 MB string", edit(estimator="e" * (1 << 20)), "larger than"),
    ("user_key_kind unknown", edit(user_key_kind="email"), "user_key_kind"),
    ("time base not unix", edit(time_base__base="trace-seconds"), "time_base.base"),
    ("utc offset 1e9", edit(time_base__utc_offset=1e9), "time_base.utc_offset"),
    ("time zone a number", edit(time_base__timezone=3600), "time_base.timezone"),
    ("unix start a string", edit(time_base__unix_start="1996"), "time_base.unix_start"),
    ("training window jobs 0", edit(training_window__jobs=0), "training_window.jobs"),
    ("training window jobs text", edit(training_window__jobs="many"), "training_window.jobs"),
    ("versions a list", edit(versions=["1.9"]), "versions"),
    ("scikit-learn version missing", lambda p: edit(versions={"rush": "0", "numpy": "2"})(p), "scikit-learn"),
    (
        "scikit-learn other version",
        lambda p: edit(versions=card(p)["versions"] | {"scikit-learn": "0.24.2"})(p),
        "0.24.2",
    ),
    *[(f"key {k} missing", drop(k), k) for k in REQUIRED],
    # the card: not a card at all
    ("card not JSON", raw_card(b"{broken"), "not JSON"),
    ("card empty", raw_card(b""), "not JSON"),
    ("card a JSON list", raw_card(b"[1, 2, 3]"), "not an object"),
    ("card JSON null", raw_card(b"null"), "not an object"),
    ("card not UTF-8", raw_card(b'{"model": "\xff\xfe"}'), "cannot read"),
    ("card nested 100,000 deep", raw_card(b"[" * 100_000 + b"]" * 100_000), "card"),
    ("card 2 MB", raw_card(b" " * (2 << 20) + b"{}"), "larger than"),
    ("card missing", lambda p: sidecar_path(p).unlink(), "card .*missing"),
    ("card a directory", card_is_directory, "card .*missing"),
    ("card of another model", card_of_another_model, "sha256 mismatch"),
    # the model file
    ("model file truncated", truncate, "sha256 mismatch"),
    ("model truncated, card agrees", replace_model(truncate), "cannot load the model"),
    ("model empty, card agrees", replace_model(lambda p: p.write_bytes(b"")), "cannot load the model"),
    ("model text, card agrees", replace_model(lambda p: p.write_text("hello")), "cannot load the model"),
    ("model a dict pickle", replace_model(lambda p: joblib.dump({"a": 1}, p)), "holds a dict"),
    (
        "model plain pickle of a list",
        replace_model(lambda p: p.write_bytes(pickle.dumps([1]))),
        "holds a list",
    ),
    (
        "model a bare classifier (old rush)",
        replace_model(lambda p: joblib.dump(RuntimeClassifier(n_estimators=2).fit([[0], [1]], [0, 1]), p)),
        "not a runtime-class pipeline",
    ),
    ("model an unfitted pipeline", replace_model(unfitted_pipeline), "never fitted"),
    ("model a directory", model_is_directory, "is a directory"),
    ("model missing", lambda p: p.unlink(), "not found"),
    ("card divider disagrees with the pipeline", edit(divider=123.0), "disagree on divider"),
    ("card classes disagree", edit(classes=[0, 1, 2]), "disagree on classes"),
    ("card zone disagrees", edit(time_base__timezone="UTC"), "disagree on time_base.timezone"),
    ("card zone unknown here", edit(time_base__timezone="Mars/Olympus"), "unknown time zone"),
    ("card user kind disagrees", edit(user_key_kind="name"), "disagree on user_key_kind"),
]


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    path = tmp_path_factory.mktemp("good") / "rc.joblib"
    save_trained(path)
    return path


def test_case_count():
    assert len(CASES) == 66 and len({name for name, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize(("name", "spoil", "message"), CASES, ids=[c[0] for c in CASES])
def test_hostile_model_file_is_a_clear_model_error(good, tmp_path, name, spoil, message):
    path = tmp_path / "rc.joblib"
    path.write_bytes(good.read_bytes())
    sidecar_path(path).write_bytes(sidecar_path(good).read_bytes())
    spoil(path)
    with pytest.raises(ModelError, match=message) as err:
        load_runtime_model(path)
    assert str(path) in err.value.where and err.value.fix
    assert len(str(err.value)) < 2000  # the hostile value is never echoed back
    # The daemon gets the same error (it journals it and falls back to the rule, if any).
    with pytest.raises(ModelError):
        load_class_predictor(path, None, small_below=None)


@pytest.mark.parametrize("name", ["x" * 300, "x" * 300 + "/rc.joblib"], ids=["file", "directory"])
def test_a_path_over_name_max_is_a_model_error(tmp_path, name):
    """Found by fuzzing: a name over NAME_MAX made Path.is_dir() raise OSError (ENAMETOOLONG)."""
    path = tmp_path / name
    with pytest.raises(ModelError, match="File name too long") as err:
        load_runtime_model(path)
    assert err.value.fix


def test_a_model_is_never_saved_over_a_device_or_fifo(tmp_path):
    """Found by fuzzing (trace convert did it to /dev/zero as root): the model and its card are
    renamed into place, which would replace a device node; a FIFO stands in for it here."""
    from rush.models.model_card import RuntimeClassCard
    from rush.models.persistence import save_model

    model = trained()
    for fifo in (tmp_path / "rc.joblib", sidecar_path(tmp_path / "other.joblib")):
        os.mkfifo(fifo)
        with pytest.raises(ModelError, match="not a regular file"):
            save_model(
                model.model,
                fifo if fifo.suffix == ".joblib" else tmp_path / "other.joblib",
                model.metadata,
                card=RuntimeClassCard,
            )
        assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.joblib.json", "rc.joblib"]
