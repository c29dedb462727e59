"""The daemon service's kernels compiled in a child process, then loaded by the service.

A process that compiles numba's kernels keeps the compiler's state (about 310 000 IR objects and
LLVM's modules, about 490 MB) for its whole life, and ran the daemon's steady cycle at 10 000
pending 13-17 ms slower than one that loaded the same kernels from numba's cache
(docs/research.md, round 30, r31cold). So the service runs :func:`rush.core.warm_up.warm_live_pass`
in a child interpreter with the same environment (the same cache), which writes the cache, and
then its own ``warm_live_pass`` only loads. The Flux module cannot do this (the broker's embedded
interpreter has no ``sys.executable`` to start); ``rush warmup`` before its first load does.

    python -m rush.daemon.warm_child      # the child: a pickled CoreConfig on stdin
"""

from __future__ import annotations

import pickle
import subprocess
import sys

from rush.core.config import CoreConfig
from rush.core.warm_up import warm_live_pass

# A cold compile of every live kernel takes 1-3 minutes on a loaded 2-core host; a child that
# runs for 10 is stuck, and the service then compiles in-process rather than wait.
CHILD_TIMEOUT = 600.0


def warm_live_pass_in_child(config: CoreConfig, timeout: float = CHILD_TIMEOUT) -> int:
    """:func:`warm_live_pass` under ``config`` in a child interpreter; its pass count. Raises
    ``OSError`` or ``subprocess.SubprocessError`` when the child cannot run, fails or overruns
    ``timeout`` (the caller then compiles in-process, as before)."""
    done = subprocess.run(
        [sys.executable, "-m", __name__],
        input=pickle.dumps(config),  # to our own child, of our own class: nothing foreign
        capture_output=True,
        timeout=timeout,
        check=True,
    )
    return int(done.stdout.split()[-1])


if __name__ == "__main__":
    print(warm_live_pass(pickle.loads(sys.stdin.buffer.read())))
