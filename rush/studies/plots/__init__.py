"""Every PNG rush draws, one module per output family.

* :mod:`.simulation`: ``rush report RUN_DIR`` (cumulative bounded slowdown, wait vs runtime,
  utilization, Gantt charts of simulator runs).
* :mod:`.speculative`: ``rush experiment speculative`` (ratio_vs_n.png, trace.png).
* :mod:`.mixed`: ``rush experiment mixed`` (``<trace>_weekly_bsld.png``).
* :mod:`.regression`: ``rush experiment regression`` (spread.png, vif.png, evaluation.png).
* :mod:`.contention`: ``rush experiment variability`` (fig4_variation_runs.png,
  fig5_runtimes.png, fig6_makespan.png, skip_limit.png; ``-<variant>`` for sensitivity variants).
* :mod:`.runtime_classes`: ``sim/runtime_classes/run.py`` (``cumulative_bsld_<trace>.png``).

matplotlib is imported only inside the functions (start-up time); :func:`pyplot` is the one
place that picks the Agg backend, so no plot ever needs a display.
"""

from __future__ import annotations

from types import ModuleType


def pyplot() -> ModuleType:
    """matplotlib.pyplot on the Agg backend (files only: rush runs on headless nodes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
