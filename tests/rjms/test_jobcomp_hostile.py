"""Hostile lines in Slurm's jobcomp/filetxt file (read for jobs slurmctld has forgotten): lines
it cannot read are left out, never a traceback that fails every daemon cycle; a job's name
cannot speak for another job (found by fuzzing :func:`parse_jobcomp`)."""

from __future__ import annotations

from rush.rjms.slurm import parse_jobcomp

LINE = (
    "JobId={id} UserId=alice(1000) GroupId=users(100) Name={name} JobState=COMPLETED Partition=debug "
    "TimeLimit=5 StartTime=2024-01-01T00:00:10 EndTime=2024-01-01T00:01:00 NodeList=n1 NodeCnt=1 "
    "ProcCnt={procs} SubmitTime=2024-01-01T00:00:00 ExitCode=0:0\n"
)


def line(job_id: str = "5", name: str = "job", procs: str = "4") -> str:
    return LINE.format(id=job_id, name=name, procs=procs)


def test_a_plain_line_is_read() -> None:
    [(job_id, record)] = parse_jobcomp(line()).items()
    assert job_id == 5 and record["procs"] == 4 and record["state"] == "COMPLETED"
    assert record["end"] - record["start"] == 50


def test_ids_and_counts_int_refuses_are_left_out() -> None:
    text = line("²") + line("9" * 5000) + line("6", procs="²") + line("7", procs="9" * 5000) + line("8")
    records = parse_jobcomp(text)
    assert sorted(records) == [6, 7, 8]
    assert records[6]["procs"] is None and records[7]["procs"] is None and records[8]["procs"] == 4


def test_a_job_name_cannot_give_another_job_id() -> None:
    """Slurm writes JobId first, then the user's job name: the name's ``JobId=7`` is not job 7."""
    records = parse_jobcomp(line("5", name="x JobId=7"))
    assert sorted(records) == [5]
