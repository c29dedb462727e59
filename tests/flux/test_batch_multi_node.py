"""A batch job over several Flux nodes runs its command to the end (real Flux).

rush's batch jobspec runs the command on the first node only; the other nodes' tasks exit at
once. Without ``exit-timeout = "none"`` the Flux shell killed such a job 30 s after its start
(found on issue 29's live windows: 4-node replay jobs of CTC-SP2 ended after 30 s, FAILED)."""

from __future__ import annotations

import pytest

from rush.rjms.flux import FluxBackend

pytestmark = pytest.mark.flux


def test_a_two_node_batch_job_outlives_the_shells_exit_timeout(start_flux):
    flux = start_flux(size=2, cores=1)
    backend = FluxBackend(uri=flux.uri)
    job = backend.submit(name="long", procs=2, time_limit=300, command=["sleep", "35"], nodes=2)
    flux.wait_job(job, timeout=600)
    (record,) = backend.accounting([job])
    assert record["state"] == "COMPLETED", record
    assert record["ranks"] and len(set(record["ranks"])) == 2  # really on both nodes
    # The command ran to its end: the shell's default exit-timeout would have cut it at 30 s.
    assert record["end"] - record["start"] >= 35.0
