"""Resources loaded once per worker process, lazily, and kept for every later task there.

A sweep's tasks all read the same large inputs (a trace, a model). Sending them with each
task, or loading them in each task, costs as much as the simulations; instead each loader is
called the first time a task on a worker asks for its resource, and the result stays in this
module's cache in that worker process. The cache key includes a token of the loader (its
pickled bytes), so a later sweep with another loader under the same name loads anew.
"""

from __future__ import annotations

import hashlib
import pickle
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from rush.errors import ConfigError

_CACHE: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()  # a worker with several threads still loads each resource once


def loader_token(name: str, loader: Callable[[], Any]) -> str:
    """A fingerprint of the loader, checked in the client: an unpicklable loader fails early."""
    if not callable(loader):
        raise ConfigError(
            f"resource {name!r} is a {type(loader).__name__}, not a loader",
            where=f"resources[{name!r}]",
            fix="give a zero-argument function, e.g. functools.partial(load_trace, 'SDSC-SP2')",
        )
    try:
        data = pickle.dumps(loader)
    except Exception:
        try:
            import cloudpickle  # dask's serialiser: lambdas and closures

            data = cloudpickle.dumps(loader)
        except Exception as exc:
            raise ConfigError(
                f"resource {name!r} cannot be sent to workers: {exc}",
                where=f"resources[{name!r}]",
                fix="use a top-level function or functools.partial of one",
            ) from None
    return hashlib.sha256(data).hexdigest()[:16]


class WorkerResources(Mapping[str, Any]):
    """What a task receives: ``resources[name]`` loads on first use in this process, then reuses."""

    def __init__(self, loaders: dict[str, Callable[[], Any]], tokens: dict[str, str]) -> None:
        self._loaders = loaders
        self._tokens = tokens

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaders:
            raise KeyError(f"no resource {name!r} (the sweep has: {', '.join(sorted(self._loaders))})")
        key = (name, self._tokens[name])
        with _LOCK:
            if key not in _CACHE:
                _CACHE[key] = self._loaders[name]()
            return _CACHE[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaders)

    def __len__(self) -> int:
        return len(self._loaders)


def clear_cache() -> None:
    """Forget every loaded resource of this process (tests; a long-lived serial process)."""
    with _LOCK:
        _CACHE.clear()
