"""rush: a resource-utilization-aware, learning scheduler for HPC clusters.

One policy core (``rush.core``) is shared by the trace simulator (``rush.simulator``)
and the live daemon (``rush.daemon``).
"""

__version__ = "0.1.0"

# Before any submodule imports numba: where its cache of the compiled kernels lives (a
# directory per version of the kernel sources; see rush.jit_cache.configure_numba_cache).
from rush.jit_cache import configure_numba_cache as _configure_numba_cache  # noqa: E402

_configure_numba_cache()
