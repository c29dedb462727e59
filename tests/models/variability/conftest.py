"""A synthetic campaign, its dataset and a small trained model, shared by the module's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from rush.models.variability.dataset import DatasetOptions, build_dataset
from rush.models.variability.train import TrainOptions, train_variability
from tests.models.variability.synth import write_campaign

FAST = TrainOptions(seed=0, models=("adaboost", "extra_trees"), n_estimators=10, rfe_step=0.25)


@pytest.fixture(scope="session")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_campaign(tmp_path_factory.mktemp("campaign"))


@pytest.fixture(scope="session")
def dataset(campaign):
    records, store = campaign
    return build_dataset(records, store, DatasetOptions(window=300.0, scopes=("job", "all")))


@pytest.fixture(scope="session")
def trained(dataset):
    """Counters only (no probe): the live predictor reads the store's window."""
    return train_variability(
        dataset, TrainOptions(**{**FAST.__dict__, "exclude": ("probe",), "final_scope": "all"})
    )


@pytest.fixture(scope="session")
def model_file(trained, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("model") / "variability.joblib"
    trained.save(path)
    return path
