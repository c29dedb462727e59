"""The collector interface: samples, collectors and their registry.

A collector reads one source (sysfs, procfs, LDMS files, Cassandra, Prometheus) and
returns :class:`Sample` records; counters are turned into per-second rates with
:class:`rush.collect.rates.RateTracker`. Collectors register by name and import their
optional dependencies lazily, so a missing one is reported only when it is asked for.
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from rush.errors import BackendUnavailableError, ConfigError


@dataclass(frozen=True)
class Sample:
    timestamp: float  # unix seconds
    host: str
    source: str  # collector name, e.g. "sysfs_ib"
    metric: str  # e.g. "ib_xmit_bytes_per_s"
    value: float


class Collector(abc.ABC):
    name: str = ""
    # A source with many options takes them as one dataclass of this type;
    # :func:`get_collector` builds it from the ``[[collect.sources]]`` table.
    options_type: ClassVar[type | None] = None

    @abc.abstractmethod
    def collect(self) -> list[Sample]:
        """One reading of the source."""


# name -> module that registers it (imported on first use)
_MODULES: dict[str, str] = {
    "sysfs_ib": "rush.collect.sysfs_ib",
    "lustre": "rush.collect.lustre",
    "rapl": "rush.collect.rapl",
    "ldms": "rush.collect.ldms",
    "sonar": "rush.collect.sonar",
    "prometheus": "rush.collect.prometheus",
    "procfs": "rush.collect.procfs",
}
_REGISTERED: dict[str, type[Collector]] = {}


def register_collector(name: str) -> Callable[[type[Collector]], type[Collector]]:
    def decorate(cls: type[Collector]) -> type[Collector]:
        cls.name = name
        _REGISTERED[name] = cls
        return cls

    return decorate


def collector_names() -> list[str]:
    return sorted(set(_MODULES) | set(_REGISTERED))


def get_collector(name: str, **options: object) -> Collector:
    if name not in _REGISTERED:
        module = _MODULES.get(name)
        if module is None:
            raise ConfigError(
                f"unknown collector {name!r}",
                where="collect.sources",
                fix=f"use one of: {', '.join(collector_names())}",
            )
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise BackendUnavailableError(
                f"collector {name!r} needs a module that is not installed: {exc.name}",
                where=f"collector {name!r}",
                fix=f"pip install {exc.name} (or pip install 'rush[cassandra]' for sonar)",
            ) from exc
    try:
        cls = _REGISTERED[name]
        if cls.options_type is not None:
            return cls(cls.options_type(**options))  # type: ignore[call-arg]
        return cls(**options)
    except TypeError as exc:
        raise ConfigError(
            f"bad options for collector {name!r}: {exc}", where=f"collect.sources.{name}"
        ) from exc
