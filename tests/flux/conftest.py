"""Real Flux instances for the tests (``flux start --test-size=N``), see tests/flux/instance.py.

``flux_instance``: one instance per test module (1 fake node, 16 cores, sched-simple), its
queue emptied before each test by ``flux``. ``start_flux(size=, cores=, config=)`` starts more
(stopped at the end of the test). Tests using them get the ``flux`` marker and skip with the
reason when no Flux is installed.

The live RUSH tests' (tests/flux/live_rush.py): ``network_model``, the learned variation
model under which network jobs vary with the noise and others do not (one per test module),
and ``live_features``, this host's procfs counters sampled live into the feature store the
model reads.

Beside Fluxion (test_rush_on_fluxion.py, test_jobspecs_fluxion.py): ``plugin``, rush's jobtap
plugin built once a session, skipping where Fluxion cannot run (test_daemon_flux.py and
test_priority_plugin.py define their own ``plugin``, which needs no Fluxion), and ``instances``,
the instances a test starts, each emptied and stopped at its end.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.flux import fluxion, plugin_build
from tests.flux.instance import FluxInstance, available


def pytest_collection_modifyitems(config, items):
    for item in items:
        names = getattr(item, "fixturenames", ())
        if any(n in names for n in ("flux_instance", "flux", "start_flux")):
            item.add_marker(pytest.mark.flux)


@pytest.fixture(scope="module")
def flux_instance(tmp_path_factory: pytest.TempPathFactory):
    why = available()
    if why:
        pytest.skip(why)
    instance = FluxInstance(tmp_path_factory.mktemp("flux"), size=1, cores=16).start()
    yield instance
    instance.stop()


@pytest.fixture
def flux(flux_instance):
    flux_instance.cancel_all()
    yield flux_instance
    flux_instance.cancel_all()


@pytest.fixture
def start_flux(tmp_path_factory: pytest.TempPathFactory):
    why = available()
    if why:
        pytest.skip(why)
    started: list[FluxInstance] = []

    def start(**kwargs) -> FluxInstance:
        instance = FluxInstance(tmp_path_factory.mktemp("flux"), **kwargs)
        started.append(instance)
        return instance.start()

    yield start
    for instance in started:
        instance.stop()


@pytest.fixture(scope="module")
def network_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.live_rush_common import train_model

    dataset_mod = pytest.importorskip("rush.models.variability.dataset", reason="the dataset builder absent")
    train_mod = pytest.importorskip("rush.models.variability.train", reason="the training absent")
    work = tmp_path_factory.mktemp("rush-live-model")
    return train_model(work, dataset_mod, train_mod, sensitive=frozenset({"network"}))


@pytest.fixture
def live_features(tmp_path: Path) -> Iterator[Path]:
    from tests.live_rush_common import live_store

    with live_store(tmp_path / "features.sqlite") as path:
        yield path


@pytest.fixture(scope="session")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    why = fluxion.unavailable()
    if why:
        pytest.skip(why)
    return plugin_build.plugin_or_skip(tmp_path_factory)


@pytest.fixture
def instances() -> Iterator[list[FluxInstance]]:
    launched: list[FluxInstance] = []
    yield launched
    for inst in launched:
        inst.cancel_all()
        inst.stop()
