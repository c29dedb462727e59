"""Real Flux instances for the tests (``flux start --test-size=N``), see tests/flux/instance.py.

``flux_instance``: one instance per test module (1 fake node, 16 cores, sched-simple), its
queue emptied before each test by ``flux``. ``start_flux(size=, cores=, config=)`` starts more
(stopped at the end of the test). Tests using them get the ``flux`` marker and skip with the
reason when no Flux is installed.
"""

from __future__ import annotations

import pytest

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
