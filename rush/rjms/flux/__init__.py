"""The Flux backend (:mod:`rush.rjms.flux.backend`) and one module per Flux format beside it,
as the Slurm side has ``slurm_json``, ``slurm_cli`` and ``slurm_rest``:

* :mod:`~rush.rjms.flux.jobspec`: RFC 25 jobspecs (rush's tags, the core's request, what rush submits);
* :mod:`~rush.rjms.flux.resource_set`: R version 1 (nodes, allocations, core counts);
* :mod:`~rush.rjms.flux.idset` and :mod:`~rush.rjms.flux.hostlist`: RFC 22 idsets, RFC 29 hostlists;
* :mod:`~rush.rjms.flux.accounting`: flux-accounting's fair-share memo and associations;
* :mod:`~rush.rjms.flux.job_states`: job states and urgency levels.

Importing the package registers the ``flux`` backend; what callers use is exported here.
"""

from __future__ import annotations

from rush.rjms.flux.accounting import (
    FAIRSHARE_FIX,
    MF_PRIORITY,
    association_fairshare,
    association_fairshares,
    checked_fairshare,
    memo_fairshare,
)
from rush.rjms.flux.backend import (
    KILL_NOTE,
    PLUGIN_MAX_BATCH,
    PLUGIN_SERVICE,
    PRIORITY_LEVERS,
    PRIORITY_MAX,
    REPLACEMENT_SEARCH_MAX,
    RESULTS,
    FluxBackend,
    import_flux,
    result_name,
    urgency_for,
)
from rush.rjms.flux.hostlist import expand_hostlist
from rush.rjms.flux.idset import MAX_IDS, idset_ids, idset_size
from rush.rjms.flux.job_states import (
    STATE_CLEANUP,
    STATE_DEPEND,
    STATE_INACTIVE,
    STATE_PENDING,
    STATE_PRIORITY,
    STATE_RUN,
    STATE_RUNNING,
    STATE_SCHED,
    URGENCY_DEFAULT,
    URGENCY_EXPEDITE,
    URGENCY_HOLD,
)
from rush.rjms.flux.jobspec import (
    BATCH_GUARD,
    MAX_RESOURCE_DEPTH,
    JobSubmission,
    build_jobspec,
    comment_tags,
    jobspec_tags,
    request_from_jobspec,
    submit_time,
    trusted_submit_time,
)
from rush.rjms.flux.resource_set import (
    allocation_from_r,
    count_cores,
    nodes_from_r,
    queue_requirements,
    r_hosts,
    r_ranks,
)

__all__ = [
    "BATCH_GUARD",
    "FAIRSHARE_FIX",
    "KILL_NOTE",
    "MAX_IDS",
    "MAX_RESOURCE_DEPTH",
    "MF_PRIORITY",
    "PLUGIN_MAX_BATCH",
    "PLUGIN_SERVICE",
    "PRIORITY_LEVERS",
    "PRIORITY_MAX",
    "REPLACEMENT_SEARCH_MAX",
    "RESULTS",
    "STATE_CLEANUP",
    "STATE_DEPEND",
    "STATE_INACTIVE",
    "STATE_PENDING",
    "STATE_PRIORITY",
    "STATE_RUN",
    "STATE_RUNNING",
    "STATE_SCHED",
    "URGENCY_DEFAULT",
    "URGENCY_EXPEDITE",
    "URGENCY_HOLD",
    "FluxBackend",
    "JobSubmission",
    "allocation_from_r",
    "association_fairshare",
    "association_fairshares",
    "build_jobspec",
    "checked_fairshare",
    "comment_tags",
    "count_cores",
    "expand_hostlist",
    "idset_ids",
    "idset_size",
    "import_flux",
    "jobspec_tags",
    "memo_fairshare",
    "nodes_from_r",
    "queue_requirements",
    "r_hosts",
    "r_ranks",
    "request_from_jobspec",
    "result_name",
    "submit_time",
    "trusted_submit_time",
    "urgency_for",
]
