"""The file ``flux module load`` takes: rush as Flux's scheduler (see rush/flux_module/scheduler.py).

Flux's module loader runs a file by path without registering it as a module, so the module
itself is imported normally from the rush package here; ``rush flux-module`` prints this
file's path.
"""

from rush.flux_module.scheduler import RushScheduler


def mod_main(h, *args):
    RushScheduler(h, *args).run()
