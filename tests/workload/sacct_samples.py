"""Recorded sacct answers (Slurm 22.05 and 23.11 JSON, parsable text) shared by the sacct tests."""

from __future__ import annotations

# sacct --json from Slurm 22.05 (openapi/dbv0.0.38), trimmed to two jobs with one step.
JOBS_2205 = {
    "meta": {
        "plugin": {"type": "openapi/dbv0.0.38", "name": "Slurm OpenAPI DB v0.0.38"},
        "Slurm": {"version": {"major": 22, "micro": 8, "minor": 5}, "release": "22.05.8"},
    },
    "errors": [],
    "jobs": [
        {
            "account": "physics",
            "job_id": 101,
            "name": "lammps",
            "partition": "batch",
            "user": "alice",
            "group": "users",
            "cluster": "linux",
            "state": {"current": "COMPLETED", "reason": "None"},
            "time": {
                "elapsed": 3500,
                "eligible": 1700000000,
                "submission": 1700000000,
                "start": 1700000100,
                "end": 1700003600,
                "suspended": 0,
                "limit": 120,
            },
            "required": {"CPUs": 64, "memory": 0},
            "tres": {
                "allocated": [
                    {"type": "cpu", "name": "", "id": 1, "count": 64},
                    {"type": "node", "name": "", "id": 4, "count": 2},
                ],
                "requested": [{"type": "cpu", "name": "", "id": 1, "count": 64}],
            },
            "steps": [
                {
                    "step": {"id": "101.batch", "name": "batch"},
                    "time": {"elapsed": 3500, "start": 1700000100, "end": 1700003600},
                }
            ],
        },
        {
            "account": "bio",
            "job_id": 102,
            "name": "blast",
            "partition": "debug",
            "user": "bob",
            "group": "users",
            "cluster": "linux",
            "state": {"current": "CANCELLED", "reason": "None"},
            "time": {"elapsed": 0, "submission": 1700000050, "start": 0, "end": 1700000500, "limit": 30},
            "required": {"CPUs": 8, "memory": 0},
            "tres": {"allocated": [], "requested": [{"type": "cpu", "id": 1, "count": 8}]},
            "steps": [],
        },
    ],
}


# Slurm 23.02+/23.11+: numbers wrapped as {set, infinite, number}, state.current a list.
JOBS_2311 = {
    "jobs": [
        {
            "account": "physics",
            "job_id": 7,
            "name": "x",
            "partition": "batch",
            "user": "alice",
            "state": {"current": ["TIMEOUT"], "reason": "None"},
            "time": {
                "elapsed": 600,
                "submission": 100,
                "start": 160,
                "end": 760,
                "limit": {"set": True, "infinite": False, "number": 10},
            },
            "required": {"CPUs": 4},
            "tres": {"allocated": [{"type": "cpu", "count": 4}]},
        },
        {
            "account": "physics",
            "job_id": 8,
            "name": "y",
            "partition": "batch",
            "user": "carol",
            "state": {"current": ["COMPLETED"], "reason": "None"},
            "time": {
                "elapsed": 60,
                "submission": 110,
                "start": 200,
                "end": 260,
                "limit": {"set": False, "infinite": True, "number": 0},
            },
            "required": {"CPUs": 2},
            "tres": {"allocated": [{"type": "cpu", "count": 2}]},
        },
    ]
}


PARSABLE = """JobID|JobName|Partition|Account|AllocCPUS|ReqCPUS|State|Submit|Start|End|Elapsed|Timelimit|User
201|sim|batch|physics|16|16|COMPLETED|2023-01-02T03:00:00|2023-01-02T03:10:00|2023-01-02T05:10:00|02:00:00|1-00:00:00|carol
201.batch|batch||physics|16|16|COMPLETED|2023-01-02T03:10:00|2023-01-02T03:10:00|2023-01-02T05:10:00|02:00:00||
201.0|orted||physics|16|16|COMPLETED|2023-01-02T03:10:01|2023-01-02T03:10:01|2023-01-02T05:10:00|01:59:59||
202|post|debug|bio|1|1|FAILED|2023-01-02T03:05:00|2023-01-02T03:06:00|2023-01-02T03:06:30|00:30|UNLIMITED|dave
203|queued|batch|bio|0|4|PENDING|2023-01-02T04:00:00|Unknown|Unknown|00:00:00|30:00|dave
"""
