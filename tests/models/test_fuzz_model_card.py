"""Fuzzed model cards (a derandomized hypothesis profile, tests/hostile_mutations.py): a trained
runtime-class model's card with hostile leaves or damaged bytes, or an intact card beside a
damaged model file. Each load is the model or a ModelError naming the file; never another exception,
and nothing is unpickled unless the file's sha256 is the card's (model files are code)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import joblib
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rush.errors import ModelError
from rush.models.model_card import RuntimeClassCard
from rush.models.persistence import load_model, sidecar_path
from tests.hostile_mutations import FUZZ, byte_mutate, mutate
from tests.models.fixtures import save_trained


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("good") / "rc.joblib"
    save_trained(path)
    return path


@pytest.fixture(scope="module")
def unpickled(good) -> list[bool]:
    """Each joblib.load: was the file's sha256 the card's?"""
    loads: list[bool] = []
    real = joblib.load

    def spy(path, *args, **kwargs):
        card = json.loads(sidecar_path(path).read_text())
        loads.append(hashlib.sha256(Path(path).read_bytes()).hexdigest() == card.get("sha256"))
        return real(path, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(joblib, "load", spy)
        yield loads


@FUZZ
@given(st.data())
def test_fuzzed_model_card(good, unpickled, data):
    path = good.parent / "fuzzed" / "rc.joblib"
    path.parent.mkdir(exist_ok=True)
    card, model = sidecar_path(good).read_bytes(), good.read_bytes()
    case = data.draw(st.integers(0, 2))
    if case == 0:
        card = json.dumps(mutate(json.loads(card), data, 3)).encode()
    elif case == 1:
        card = byte_mutate(card, data)
    else:  # the card intact, the model file damaged: never unpickled
        model = byte_mutate(model, data)
    path.write_bytes(model)
    sidecar_path(path).write_bytes(card)
    try:
        load_model(path, card=RuntimeClassCard)
    except ModelError as err:
        assert str(path) in str(err.where) and err.fix, str(err)
    assert all(unpickled), "a model file was unpickled although its sha256 is not the card's"
