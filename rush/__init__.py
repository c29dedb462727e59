"""rush: a resource-utilization-aware, learning scheduler for HPC clusters.

One policy core (``rush.core``) is shared by the trace simulator (``rush.simulator``)
and the live daemon (``rush.daemon``).
"""

__version__ = "0.1.0"

# Where numba's cache of the compiled kernels lives (a directory per version of the kernel
# sources), set when numba is first imported: see rush.jit_cache.configure_when_numba_is_imported.
from rush.jit_cache import configure_when_numba_is_imported as _configure_numba  # noqa: E402

_configure_numba()
