"""rush: a resource-utilization-aware, learning scheduler for HPC clusters.

One policy core (``rush.core``) is shared by the trace simulator (``rush.sim``)
and the live daemon (``rush.daemon``).
"""

__version__ = "0.1.0"
