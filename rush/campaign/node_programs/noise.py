#!/usr/bin/env python3
"""Noise job: memory-bandwidth, network-like and I/O interference switched on and off at random times.

    python3 noise.py --seed 7 --log noise.jsonl [--kinds memory,network,io] [--duration 3600] \
        [--on 20:60] [--off 20:60] [--workers 1] [--workdir DIR]

The schedule alternates *off* and *on* periods whose lengths are drawn uniformly from ``--off``
and ``--on`` (seconds, ``MIN:MAX``) by a ``random.Random(seed)``; each on-period runs one kind,
drawn from ``--kinds``. The same seed gives the same schedule (:func:`schedule`); only the
wall-clock times differ. Kinds:

* ``memory``: streaming copies between two 64 MiB arrays (memory bandwidth);
* ``network``: a TCP connection over the loopback interface carrying 1 MiB messages as fast as
  it can (what a node-local test can do of network traffic; it shows in /proc/net/dev ``lo``);
* ``io``: 8 MiB writes with ``fsync`` to a file in ``--workdir``, rewritten every 256 MiB.

Each kind runs in ``--workers`` processes that exit when the noise job's main process goes.
The log (``--log``, JSON lines, flushed per line) says what actually happened, so runs can be
labelled: a header ``{"format": "rush-noise/1", "seed", "kinds", "on", "off", "start", ...}``,
then ``{"event": "on"|"off", "kind", "t"}`` as each period starts and ends (wall-clock seconds),
and ``{"event": "end", "t"}`` when the job stops (after ``--duration`` or on SIGTERM, e.g.
``scancel``). The first period is *off* unless ``--start-on``.

Depends only on the standard library (numpy for ``memory`` when present) so it can run on
compute nodes without rush installed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing import Process

FORMAT = "rush-noise/1"
KINDS = ("memory", "network", "io")
MEMORY_BYTES = 64 * 2**20
MESSAGE_BYTES = 2**20
IO_CHUNK = 8 * 2**20
IO_FILE_BYTES = 256 * 2**20
MAX_DURATION = 7 * 86400.0


@dataclass(frozen=True)
class Period:
    """``[start, end)`` seconds from the noise job's start; ``kind`` is None when off."""

    start: float
    end: float
    kind: str | None


def schedule(
    seed: int,
    kinds: tuple[str, ...] = KINDS,
    on: tuple[float, float] = (20.0, 60.0),
    off: tuple[float, float] = (20.0, 60.0),
    *,
    start_on: bool = False,
) -> Iterator[Period]:
    """The endless off/on schedule a seed gives (relative seconds)."""
    rng = random.Random(seed)
    t, active = 0.0, start_on
    while True:
        low, high = on if active else off
        length = rng.uniform(low, high)
        kind = rng.choice(kinds) if active else None
        yield Period(t, t + length, kind)
        t += length
        active = not active


# ------------------------------------------------------------------------------ workers


def _orphaned(parent: int) -> bool:
    return os.getppid() != parent


def _default_signals() -> None:
    # A forked worker inherits the main process's "set the stop event" handlers: undo them so
    # that terminate() stops it at once.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)


def memory_worker(parent: int) -> None:
    _default_signals()
    try:
        import numpy as np

        a = np.ones(MEMORY_BYTES // 8)
        b = np.empty_like(a)
        while not _orphaned(parent):
            for _ in range(8):
                np.copyto(b, a)
                np.copyto(a, b)
    except ImportError:  # no numpy: bytes copies stream memory too, more slowly
        a = bytearray(MEMORY_BYTES)
        while not _orphaned(parent):
            for _ in range(4):
                _ = bytes(a)


def network_worker(parent: int) -> None:
    _default_signals()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]

    def drain() -> None:
        conn, _ = server.accept()
        buffer = bytearray(MESSAGE_BYTES)
        with conn:
            while conn.recv_into(buffer):
                pass

    threading.Thread(target=drain, daemon=True).start()
    message = os.urandom(MESSAGE_BYTES)
    with socket.create_connection(("127.0.0.1", port)) as client:
        while not _orphaned(parent):
            for _ in range(16):
                client.sendall(message)


def io_worker(parent: int, path: str) -> None:
    block = os.urandom(IO_CHUNK)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # run the finally: remove the file
    try:
        while not _orphaned(parent):
            with open(path, "wb") as handle:
                for _ in range(IO_FILE_BYTES // IO_CHUNK):
                    handle.write(block)
                    handle.flush()
                    os.fsync(handle.fileno())
                    if _orphaned(parent):
                        break
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


def start_workers(kind: str, count: int, workdir: str) -> list[Process]:
    parent = os.getpid()
    procs = []
    for index in range(count):
        if kind == "memory":
            proc = Process(target=memory_worker, args=(parent,), daemon=True)
        elif kind == "network":
            proc = Process(target=network_worker, args=(parent,), daemon=True)
        else:
            path = os.path.join(workdir, f".rush-noise-{parent}-{index}")
            proc = Process(target=io_worker, args=(parent, path), daemon=True)
        proc.start()
        procs.append(proc)
    return procs


def stop_workers(procs: list[Process]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.join(timeout=10)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=5)


# --------------------------------------------------------------------------------- main


def _range(text: str) -> tuple[float, float]:
    low, sep, high = text.partition(":")
    try:
        pair = (float(low), float(high if sep else low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not MIN:MAX seconds: {text!r}") from None
    if not (0 < pair[0] <= pair[1] <= 86400):  # NaN fails too
        raise argparse.ArgumentTypeError(f"need 0 < MIN <= MAX <= 86400 seconds: {text!r}")
    return pair


def _kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(dict.fromkeys(k.strip() for k in text.split(",") if k.strip()))
    unknown = [k for k in kinds if k not in KINDS]
    if not kinds or unknown:
        raise argparse.ArgumentTypeError(f"kinds must be some of {','.join(KINDS)}: {text!r}")
    return kinds


def _duration(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not seconds: {text!r}") from None
    if not 0 < value <= MAX_DURATION:
        raise argparse.ArgumentTypeError(f"--duration must be in (0, {MAX_DURATION:.0f}] seconds: {text!r}")
    return value


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(f"--workers must be 1..64: {text!r}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--log", required=True, help="JSON-lines log of the on/off events")
    parser.add_argument("--kinds", type=_kinds, default=KINDS)
    parser.add_argument("--duration", type=_duration, default=3600.0, help="seconds, then stop")
    parser.add_argument("--on", type=_range, default=(20.0, 60.0), help="on-period length MIN:MAX s")
    parser.add_argument("--off", type=_range, default=(20.0, 60.0), help="off-period length MIN:MAX s")
    parser.add_argument("--workers", type=_workers, default=1, help="processes per kind when on")
    parser.add_argument("--workdir", default=os.environ.get("TMPDIR") or ".", help="for the io kind")
    parser.add_argument("--start-on", action="store_true", help="begin with an on-period")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if "io" in args.kinds and not os.path.isdir(args.workdir):
        print(f"error: --workdir {args.workdir!r} is not a directory", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    started = time.time()
    with open(args.log, "a") as log:

        def write(obj: dict[str, object]) -> None:
            log.write(json.dumps(obj, sort_keys=True) + "\n")
            log.flush()

        write(
            {
                "format": FORMAT,
                "seed": args.seed,
                "kinds": list(args.kinds),
                "on": list(args.on),
                "off": list(args.off),
                "workers": args.workers,
                "duration": args.duration,
                "start_on": args.start_on,
                "start": started,
                "host": socket.gethostname(),
                "job_id": os.environ.get("SLURM_JOB_ID") or os.environ.get("FLUX_JOB_ID"),
            }
        )
        workers: list[Process] = []
        for period in schedule(args.seed, args.kinds, args.on, args.off, start_on=args.start_on):
            if stop.is_set() or period.start >= args.duration:
                break
            if period.kind is not None:
                workers = start_workers(period.kind, args.workers, args.workdir)
                write({"event": "on", "kind": period.kind, "t": time.time()})
            stop.wait(max(0.0, started + min(period.end, args.duration) - time.time()))
            if period.kind is not None:
                stop_workers(workers)
                write({"event": "off", "kind": period.kind, "t": time.time()})
        write({"event": "end", "t": time.time()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
