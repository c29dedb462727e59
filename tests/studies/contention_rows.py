"""Hand-made job rows and questions of the variability study, for its report's tests."""

from __future__ import annotations


def job(policy: str, trial: int, app: str = "SWFFT", **over) -> dict:
    row = {
        "variant": "paper",
        "scenario": "ADAA",
        "policy": policy,
        "trial": trial,
        "job_id": over.pop("job_id", 1),
        "app": app,
        "wtype": "network",
        "size": 16,
        "submit": 0.0,
        "start": 0.0,
        "end": 100.0,
        "runtime": 100.0,
        "base": 100.0,
        "slowdown": 1.0,
        "wait": 0.0,
        "skips": 0,
        "skip_limit": {"RUSH-30": 30, "RUSH-UNLIMITED": -1}.get(policy, 10),
        "limit_hit": False,
        "noise_level": 0.5,
        "variation": False,
    }
    row.update(over)
    return row


def ask(
    policy: str,
    flag: bool,
    oracle: bool,
    trial: int = 0,
    app: str = "SWFFT",
    job_id: int = 1,
    t: float = 10.0,
) -> dict:
    return {
        "variant": "paper",
        "scenario": "ADAA",
        "policy": policy,
        "trial": trial,
        "t": t,
        "job_id": job_id,
        "app": app,
        "flag": flag,
        "oracle_flag": oracle,
    }


def trials() -> list[dict]:
    """Two paired trials of FCFS+EASY, RUSH and the present-state oracle.

    Runs with variation (campaign): FCFS+EASY 3 and 2, RUSH 1 and 2, oracle 0 and 1; so RUSH
    removes 2 and 0 (mean 1), the oracle 3 and 1 (mean 2): RUSH reaches half the oracle's.
    Makespans: FCFS+EASY 1000 and 2000 s, RUSH 1100 and 1800 s: +10 % and -10 %.
    """
    rows = []
    for policy, varied, spans in (
        ("FCFS+EASY", (3, 2), (1000.0, 2000.0)),
        ("RUSH", (1, 2), (1100.0, 1800.0)),
        ("PRESENT-ORACLE", (0, 1), (1000.0, 2000.0)),
    ):
        for t in (0, 1):
            for k in range(4):
                rows.append(
                    job(
                        policy,
                        t,
                        job_id=k,
                        submit=100.0 + 10.0 * k,  # the first submit is 100 s
                        end=100.0 + (spans[t] if k == 3 else 500.0),
                        variation=k < varied[t],
                    )
                )
    return rows
