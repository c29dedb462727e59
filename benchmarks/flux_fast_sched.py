"""A prototype of the fix benchmarks/bench_flux_nodes.py suggests for rush's Flux module, to
measure it (``--fast``); rush/flux_module/ is unchanged. Loaded by path in place of
``rush/flux_module/sched-rush.py`` (same arguments).

Why: rush's module allocates each of the core's starts with an RFC 31 ``ranks`` constraint
(exactly the core's nodes). flux-core 0.88's ``Rv1Pool.alloc`` checks the constraint on every
candidate node, and ``Rv1Set._matches_constraint`` decodes the constraint's idset string again
for each node: at 1 000 nodes that is ~1 000 ``IDset`` constructions per allocation (cProfile:
~85% of the module's time). The fix: a pool whose ``_matches_constraint`` decodes a pure
``ranks`` constraint once (cached by its strings) and tests set membership.
"""

from __future__ import annotations

import json

from flux.idset import IDset  # type: ignore[import-not-found]
from flux.resource.ResourcePool import ResourcePool  # type: ignore[import-not-found]
from flux.resource.Rv1Pool import Rv1Pool  # type: ignore[import-not-found]

from rush.flux_module.scheduler import RushScheduler

# Decoded ``ranks`` constraints, by their idset strings (a constraint is the same set each time).
_RANKS: dict[tuple[str, ...], frozenset[int]] = {}


class RankCachedPool(Rv1Pool):
    def _matches_constraint(self, rank: int, info: dict, constraint: dict) -> bool:
        if isinstance(constraint, dict) and len(constraint) == 1 and "ranks" in constraint:
            key = tuple(constraint["ranks"])
            ids = _RANKS.get(key)
            if ids is None:
                if len(_RANKS) > 4096:
                    _RANKS.clear()
                ids = _RANKS[key] = frozenset(i for s in key for i in IDset(s))
            return rank in ids
        return super()._matches_constraint(rank, info, constraint)


class RankCachedResourcePool(ResourcePool):
    def __init__(self, arg=None, version=1, log=None, **kwargs):
        if isinstance(arg, str):
            arg = json.loads(arg)
        if arg is None or isinstance(arg, dict):
            arg = RankCachedPool(arg, log=log, **kwargs)
        super().__init__(arg, version=version, log=log)


class FastRushScheduler(RushScheduler):
    pool_class = RankCachedResourcePool


def mod_main(h, *args):
    FastRushScheduler(h, *args).run()
