"""Hostile ``scontrol show topology`` output, the pod field above all (level-1 switches'
``Switches=``): a host list rush cannot read is an RJMSError naming the line and the fix, never a
crash or a hang; an absent or empty pod field means one pod; the names expanded over the whole
topology are bounded, however many lines repeat a large range."""

from __future__ import annotations

from pathlib import Path

import pytest

from rush.errors import RJMSError
from rush.rjms import slurm_json
from rush.rjms.base import get_backend

LEAVES = "SwitchName=s1 Level=0 Nodes=n[1-2]\nSwitchName=s2 Level=0 Nodes=n[3-4]\n"


@pytest.mark.parametrize(
    ("switches", "says"),
    [
        ("s[1-", "malformed range"),  # truncated
        ("s[2-1]", "reversed range"),
        ("s[1-x]", "malformed range"),
        ("s[-3]", "malformed range"),  # a negative count
        ("s[1-99999999999]", "of more than"),  # a huge count
        ("s]1[", "malformed range"),
    ],
)
def test_an_unreadable_pod_field_names_its_line_and_the_fix(switches: str, says: str) -> None:
    text = LEAVES + f"SwitchName=p0 Level=1 Switches={switches}\n"
    with pytest.raises(RJMSError, match=says) as refused:
        slurm_json.pod_switches(text)
    assert refused.value.where == "scontrol show topology, line 3"
    assert "p0" in refused.value.message and "topology Switches" in refused.value.message
    assert "topology.conf" in refused.value.fix and "scontrol reconfigure" in refused.value.fix


def test_a_leafs_unreadable_nodes_name_their_line_too() -> None:
    with pytest.raises(RJMSError, match="topology Nodes") as refused:
        slurm_json.leaf_switches("SwitchName=s1 Level=0 Nodes=n[1-2]\n\nSwitchName=s2 Level=0 Nodes=n[4-3]\n")
    assert refused.value.where == "scontrol show topology, line 3"


def test_absent_empty_or_odd_pod_fields_are_pods_of_no_node() -> None:
    text = LEAVES + (
        "SwitchName=p0 Level=1\n"  # no Switches: a pod of no node
        "SwitchName=p1 Level=1 Switches=\n"
        "Level=1 Switches=s1\n"  # no switch name: not a switch line
        "SwitchName=p2 Level=one Switches=s1\n"  # not a level rush reads
        "SwitchName=p3 Level=1 Switches=nowhere[1-3]\n"  # names no leaf
        "SwitchName=p4 Level=1 Switches=s2,s2,s1\n"
        "SwitchName=p5 Level=1 Switches=s1\n"  # s1 already in p4: stays there
        "\x00\xff garbage ===\n"
    )
    # Pods are numbered over the level-1 switch lines: p0 0, p1 1, p3 2, p4 3, p5 4.
    assert slurm_json.pod_switches(text) == {f"n{i}": 3 for i in range(1, 5)}
    assert slurm_json.pod_switches("") == {} and slurm_json.pod_switches("\x00" * 1000) == {}


def test_a_huge_pod_name_is_only_a_name() -> None:
    name = "p" * 100_000
    text = LEAVES + f"SwitchName={name} Level=1 Switches=s[1-2]\n"
    assert slurm_json.pod_switches(text) == {f"n{i}": 0 for i in range(1, 5)}
    with pytest.raises(RJMSError) as refused:
        slurm_json.pod_switches(LEAVES + f"SwitchName={name} Level=1 Switches=s[1-\n")
    assert len(str(refused.value)) < 2000  # the name is cut in the message


def test_many_lines_of_a_large_range_share_one_bound() -> None:
    # Each line alone is under the bound; together they would expand 1.2 million names (and many
    # more with more lines): refused at the line that passes the bound.
    big = slurm_json.MAX_NODES * 2 // 5
    text = LEAVES + "".join(f"SwitchName=p{k} Level=1 Switches=s[1-{big}]\n" for k in range(3))
    with pytest.raises(RJMSError, match="names of the lines before") as refused:
        slurm_json.pod_switches(text)
    assert refused.value.where == "scontrol show topology, line 5"


def _commands(tmp_path: Path, topology: str) -> Path:
    """squeue and scontrol answer with the recorded 25.11 queue and node (``vm``); scontrol show
    topology prints the file ``topology``, which the test may rewrite."""
    recorded = Path(__file__).resolve().parents[1] / "slurm" / "recorded" / "25.11" / "commands"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "topology").write_text(topology)
    scripts = {
        "squeue": f"cat '{recorded / 'jobs.json'}'",
        "scontrol": f"[ \"$2\" = nodes ] && cat '{recorded / 'nodes.json'}'\n"
        f"[ \"$2\" = topology ] && cat '{tmp_path / 'topology'}'\nexit 0",
        "sprio": "exit 0",
    }
    for tool, body in scripts.items():
        (bin_dir / tool).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / tool).chmod(0o755)
    return bin_dir


def test_the_backend_reports_the_line_and_reads_again_once_mended(tmp_path: Path) -> None:
    bin_dir = _commands(tmp_path, "SwitchName=s1 Level=0 Nodes=vm\nSwitchName=p0 Level=1 Switches=s[1-\n")
    backend = get_backend("slurm", bin_dir=str(bin_dir))
    with pytest.raises(RJMSError, match="malformed range") as refused:
        backend.read_state()
    assert refused.value.where == "scontrol show topology, line 2"
    (tmp_path / "topology").write_text("SwitchName=s1 Level=0 Nodes=vm\nSwitchName=p0 Level=1 Switches=s1\n")
    state = backend.read_state()  # the daemon's next cycle
    assert [(n.name, n.leaf, n.pod) for n in state.nodes] == [("vm", 0, 0)]
