"""The live predictor's quantiles by job, kept as the model's arrays until someone reads them.

A quantile model answers for all the jobs it predicts at once with one array (jobs, levels). The
live predictor (:mod:`rush.planner.runtime_prediction`) used to turn each row into a frozen
:class:`rush.core.snapshot.RuntimeQuantiles` at once (about 1 µs a job: 9-11 ms of a first cycle
at 10 000 pending). :class:`KeptQuantiles` keeps the rows instead and makes a job's object the
first time it is read (then the same object on every read); the snapshot builder reads the rows
as arrays (:meth:`KeptQuantiles.tokens`, :meth:`KeptQuantiles.rows`) for rule L2's columns
(:func:`rush.core.remaining_runtime.queued_projection_rows`), so a job nothing else reads never
gets an object. As a mapping it is a dict of job id -> RuntimeQuantiles: same keys, same
insertion order, same values.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableMapping

import numpy as np

from rush.core.snapshot import RuntimeQuantiles

# Rows kept beyond the live ones before the store is compacted (and at least as many as live).
_SLACK = 4096


class KeptQuantiles(MutableMapping[int, RuntimeQuantiles]):
    """Job id -> its predicted quantiles; a job kept by :meth:`keep_rows` holds a token (an
    int, its row in the store, never reused for another prediction while the store lasts) until
    it is read."""

    def __init__(self) -> None:
        self._at: dict[int, RuntimeQuantiles | int] = {}  # job id -> its object, or its token
        self._made: dict[int, RuntimeQuantiles] = {}  # token -> the object made for it when read
        self._levels: tuple[float, ...] | None = None  # the store's levels
        self._store = np.zeros((0, 0), dtype=np.float64)
        self._used = 0  # rows of the store in use
        self._base = 0  # the token of the store's row 0 (tokens grow across stores)

    # -- the mapping --------------------------------------------------------------------------
    def __getitem__(self, job_id: int) -> RuntimeQuantiles:
        value = self._at[job_id]
        return self.made(value) if type(value) is int else value

    def __setitem__(self, job_id: int, value: RuntimeQuantiles) -> None:
        self._at[job_id] = value

    def __delitem__(self, job_id: int) -> None:
        del self._at[job_id]

    def __iter__(self) -> Iterator[int]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._at

    def __repr__(self) -> str:
        return f"KeptQuantiles({dict(self.items())!r})"

    # -- rows ---------------------------------------------------------------------------------
    def keep_rows(self, job_ids: list[int], levels: tuple[float, ...], rows: np.ndarray) -> None:
        """Each job's quantiles: its row of ``rows`` (jobs, levels) at ``levels``, kept as a row."""
        rows = np.asarray(rows, dtype=np.float64)
        n = len(job_ids)
        if self._levels != levels or self._store.shape[1] != rows.shape[1]:
            self._new_store(levels, rows.shape[1])
        if self._used + n > len(self._store):
            grown = np.empty((max(2 * len(self._store), self._used + n, 64), rows.shape[1]))
            grown[: self._used] = self._store[: self._used]
            self._store = grown
        self._store[self._used : self._used + n] = rows
        first = self._base + self._used
        self._used += n
        self._at.update(zip(job_ids, range(first, first + n), strict=True))

    def tokens(self, job_ids: Iterable[int]) -> list[RuntimeQuantiles | int | None]:
        """Each job's token (a kept row), object (kept as one) or None (no quantiles)."""
        return list(map(self._at.get, job_ids))

    def rows(self, tokens: np.ndarray) -> tuple[tuple[float, ...], np.ndarray]:
        """The store's levels and the rows of ``tokens`` (this store's), as an array (n, levels)."""
        assert self._levels is not None
        return self._levels, self._store[np.asarray(tokens, dtype=np.int64) - self._base]

    def made(self, token: int) -> RuntimeQuantiles:
        """The object of a token, made the first time it is asked for and kept."""
        got = self._made.get(token)
        if got is None:
            assert self._levels is not None
            got = RuntimeQuantiles(self._levels, tuple(self._store[token - self._base].tolist()))
            self._made[token] = got
        return got

    def keep_only(self, live: set[int]) -> None:
        """Forget the jobs not in ``live`` (insertion order kept); compact the store when most
        of its rows are no longer anyone's (the kept rows get new tokens)."""
        if len(self._at) > len(live):
            self._at = {k: v for k, v in self._at.items() if k in live}
        if self._used > 2 * len(self._at) + _SLACK:
            self._compact()

    def _new_store(self, levels: tuple[float, ...], width: int) -> None:
        """Another set of levels: the jobs still holding the old store's rows get their objects."""
        for job_id, value in self._at.items():
            if type(value) is int:
                self._at[job_id] = self.made(value)
        self._made = {}
        self._base += self._used
        self._levels, self._store, self._used = levels, np.zeros((0, width), dtype=np.float64), 0

    def _compact(self) -> None:
        held = [(k, v) for k, v in self._at.items() if type(v) is int]
        old = np.fromiter((v for _, v in held), dtype=np.int64, count=len(held)) - self._base
        base = self._base + self._used
        made = {}
        for i, (job_id, token) in enumerate(held):
            self._at[job_id] = base + i
            if token in self._made:
                made[base + i] = self._made[token]
        self._store = self._store[old].copy()
        self._made, self._base, self._used = made, base, len(held)
