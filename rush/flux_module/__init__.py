"""rush as Flux's scheduler: the broker module (``sched-rush.py`` is the file Flux loads by path)."""
