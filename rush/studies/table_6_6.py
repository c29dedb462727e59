"""Table 6.6 of the runtime-classes thesis (``../shared/papers/003_a2a26e2c92a971c9.txt``) as
published: improvement of the cumulative bounded slowdown over EASY-FCFS, %, by trace. Kept
once here so that every script of ``sim/runtime_predictions`` quotes the same figures."""

from __future__ import annotations

from typing import NamedTuple


class Table66Row(NamedTuple):
    """One trace's row: the thesis's EASY++, the original authors' EASY++ (Tsafrir et al.) and
    Gaussier et al. (the thesis has no Gaussier figure of its own), the thesis's FCFS-CI and
    SPF-CI."""

    easy_pp_thesis: int
    easy_pp_authors: int
    gaussier_authors: int
    fcfs_ci: int
    spf_ci: int


TABLE_6_6 = {
    "KTH-SP2": Table66Row(23, 36, 44, 50, 59),
    "CTC-SP2": Table66Row(1, 37, 59, 79, 85),
    "SDSC-BLUE": Table66Row(38, 47, 5, 63, 74),
    "SDSC-SP2": Table66Row(32, 29, 15, 66, 75),
}
