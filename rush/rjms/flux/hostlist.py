"""RFC 29 hostlists (``node[0-3,7],login``): the node names of an R."""

from __future__ import annotations

import re

from rush.rjms.flux.idset import MAX_IDS


def expand_hostlist(hostlist: str, limit: int = MAX_IDS) -> list[str]:
    """RFC 29 hostlist (``node[0-3,7],login``) -> host names, at most ``limit``."""
    hosts: list[str] = []
    for match in re.finditer(r"([^,\[]+)(?:\[([^\]]*)\])?([^,]*)", hostlist):
        prefix, ranges, suffix = match.group(1), match.group(2), match.group(3)
        if ranges is None:
            hosts.append(prefix + suffix)
            continue
        for part in ranges.split(","):
            low, _, high = part.partition("-")
            width = len(low)
            first, last = int(low), int(high) if high else int(low)
            if last < first or len(hosts) + last - first + 1 > limit:
                raise ValueError(f"hostlist {hostlist[:80]!r}: ascending ranges, at most {limit} hosts")
            hosts.extend(f"{prefix}{i:0{width}d}{suffix}" for i in range(first, last + 1))
    return hosts
