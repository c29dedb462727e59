"""The variability study's file (rush.contention.spec): the paper's defaults, the rules, hostile input.

Hostile files go through the real command in a subprocess: exit 2, the key named, nothing created.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rush.contention.spec import (
    MAX_NODES,
    PAPER_APPS,
    PAPER_SCENARIOS,
    PDPA_TRAINING,
    THREE_APPS,
    StudySpec,
    check_scenarios,
    check_variants,
    keys_markdown,
    load_study_spec,
)
from rush.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "reference" / "variability-study.md"
PAPER_MACHINE = {
    "nodes": 512, "leaf_size": 32, "leaf_taper": 2.0, "pod_size": 512, "pod_taper": 4.0,
    "link_gbs": 12.5, "pfs_gbs": 100.0, "cores_per_node": 36, "name": "paper",
}  # fmt: skip
PAPER_NOISE = {
    "fraction": 1 / 16, "mode": "always", "intensity": (0.25, 1.0), "change_every": 180.0,
    "mean_on": 300.0, "mean_off": 600.0,
}  # fmt: skip


def topology(leaves: int, per_leaf: int, *, extra: str = "", first: int = 0) -> str:
    """A Slurm topology.conf: ``leaves`` leaf switches of ``per_leaf`` nodes under one spine."""
    lines = ["# one pod", *(
        f"SwitchName=s{i} Nodes=n[{first + i * per_leaf:05d}-{first + (i + 1) * per_leaf - 1:05d}]"
        for i in range(leaves)
    )]  # fmt: skip
    lines.append(f"SwitchName=spine Switches=s[0-{leaves - 1}]")
    return "\n".join(lines) + "\n" + extra


def study(tmp_path: Path, text: str, topo: str | None = None) -> Path:
    path = tmp_path / "study.toml"
    path.write_text(text)
    if topo is not None:
        (tmp_path / "topology.conf").write_text(topo)
    return path


def refused(tmp_path: Path, text: str, topo: str | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_study_spec(study(tmp_path, text, topo))
    return caught.value


# -- the loader ------------------------------------------------------------------------------------


def test_no_file_is_the_papers_set_up() -> None:
    spec = load_study_spec(None)
    assert spec.machine_args == PAPER_MACHINE
    assert spec.noise_args == PAPER_NOISE
    assert spec.scenarios == PAPER_SCENARIOS == ("ADAA", "ADPA", "PDPA", "WS", "SS")
    assert spec.topology is None and spec.variant_name == "paper"


def test_a_full_file_round_trips(tmp_path) -> None:
    path = study(
        tmp_path,
        'scenarios = ["ws", "ADAA"]\n'
        'apps = ["sw4lite", "PENNANT", "Kripke", "AMG", "Laghos", "LBANN", "SWFFT"]\n'
        "[machine]\nnodes = 1024\nleaf_size = 64\nleaf_taper = 3\npod_size = 256\npod_taper = 2.5\n"
        'link_gbs = 25\npfs_gbs = 400.0\ncores_per_node = 48\nname = "big"\n'
        '[noise]\nfraction = 0.125\nmode = "switching"\nintensity = [0, 0.5]\nchange_every = 30\n'
        "mean_on = 120.0\nmean_off = 240\n",
    )
    spec = load_study_spec(path)
    assert spec.machine_args == {
        "nodes": 1024, "leaf_size": 64, "leaf_taper": 3.0, "pod_size": 256, "pod_taper": 2.5,
        "link_gbs": 25.0, "pfs_gbs": 400.0, "cores_per_node": 48, "name": "big",
    }  # fmt: skip
    assert spec.noise_args == {
        "fraction": 0.125, "mode": "switching", "intensity": (0.0, 0.5), "change_every": 30.0,
        "mean_on": 120.0, "mean_off": 240.0,
    }  # fmt: skip
    assert all(isinstance(v, float) for k, v in spec.machine_args.items() if k.endswith(("taper", "gbs")))
    assert spec.scenarios == ("WS", "ADAA") and spec.source == str(path)


def test_a_partial_file_keeps_the_other_defaults(tmp_path) -> None:
    spec = load_study_spec(study(tmp_path, "[noise]\nintensity = [0.5, 0.75]\n"))
    assert spec.machine_args == {**PAPER_MACHINE, "name": "study"}
    assert spec.noise_args == {**PAPER_NOISE, "intensity": (0.5, 0.75)}
    # One pod by default, whatever the node count.
    assert load_study_spec(study(tmp_path, "[machine]\nnodes = 256\n")).machine_args["pod_size"] == 256


def test_topology_gives_the_leaf_size_and_node_count(tmp_path) -> None:
    spec = load_study_spec(study(tmp_path, '[machine]\ntopology = "topology.conf"\n', topology(8, 64)))
    assert spec.machine_args["nodes"] == 512 and spec.machine_args["leaf_size"] == 64
    assert spec.topology == str(tmp_path / "topology.conf")
    assert len(spec.leaves) == 8 and spec.leaves[0][:2] == ("n00000", "n00001")
    # Given and agreeing: accepted as is.
    spec = load_study_spec(
        study(
            tmp_path, '[machine]\nnodes = 512\nleaf_size = 32\ntopology = "topology.conf"\n', topology(16, 32)
        )
    )
    assert (spec.machine_args["nodes"], spec.machine_args["leaf_size"]) == (512, 32)


@pytest.mark.parametrize(
    ("intensity", "message"),
    [
        ("[nan, 1.0]", "finite number"),
        ("[0.25, nan]", "finite number"),
        ("[-0.25, 1.0]", "greater than or equal to 0"),
        ("[0.8, 0.2]", "lo 0.8 is above hi 0.2"),
        ("[0.2, 1.5]", "less than or equal to 1"),
        ("[0.5]", "at least 2"),
        ("[inf, inf]", "finite number"),
    ],
)
def test_bad_intensity_is_refused(tmp_path, intensity, message) -> None:
    error = refused(tmp_path, f"[noise]\nintensity = {intensity}\n")
    assert "noise.intensity" in str(error.where) and message in error.message
    assert "0 <= lo <= hi <= 1" in str(error.fix)


def test_topology_with_511_nodes_contradicts_512(tmp_path) -> None:
    conf = topology(16, 32).replace("n[00480-00511]", "n[00480-00510]")
    error = refused(tmp_path, '[machine]\nnodes = 512\ntopology = "topology.conf"\n', conf)
    assert error.where == f"{tmp_path / 'topology.conf'}: machine.nodes"
    assert "lists 511 nodes but machine.nodes is 512" in error.message
    assert "machine.nodes = 511" in str(error.fix)


def test_uneven_leaves_are_refused(tmp_path) -> None:
    conf = topology(16, 32).replace("n[00480-00511]", "n[00480-00511],x1")
    error = refused(tmp_path, '[machine]\ntopology = "topology.conf"\n', conf)
    assert "machine.leaf_size" in str(error.where) and "leaf switch 16 has 33 nodes" in error.message
    error = refused(tmp_path, '[machine]\nleaf_size = 64\ntopology = "topology.conf"\n', topology(16, 32))
    assert "has 32 nodes; machine.leaf_size is 64" in error.message


def test_a_node_in_two_switches_is_refused_at_its_line(tmp_path) -> None:
    conf = topology(16, 32).replace(
        "SwitchName=s1 Nodes=n[00032-00063]", "SwitchName=s1 Nodes=n[00031-00062]"
    )
    error = refused(tmp_path, '[machine]\ntopology = "topology.conf"\n', conf)
    # Line 1 is the comment, s0 is line 2 and s1 line 3.
    assert error.where == f"{tmp_path / 'topology.conf'}:3"
    assert "node n00031 is in two leaf switches (lines 2 and 3)" in error.message


@pytest.mark.parametrize(
    ("conf", "line", "message"),
    [
        ("SwitchName=s0 Nodes=n[0-63]\nNodeName=n1\n", 2, "not a switch line"),
        ("SwitchName=s0 Nodes=n[0-31]\nSwitchName=s0 Nodes=n[32-63]\n", 2, "defined twice"),
        ("SwitchName=s0 Nodes=n[0-63]\nSwitchName=top Switches=s[0-1]\n", 2, "'s1', which no line defines"),
        ("SwitchName=s0 Nodes=n[0-63\n", 1, "malformed"),
        (f"SwitchName=s0 Nodes=n[0-{10 * MAX_NODES}]\n", 1, f"more than {MAX_NODES}"),
        ("SwitchName=s0 Nodes=n[0-31],n5,n[32-63]\n", 1, "lists a node twice"),
    ],
)
def test_malformed_topology_lines(tmp_path, conf, line, message) -> None:
    error = refused(tmp_path, '[machine]\ntopology = "topology.conf"\n', conf)
    assert error.where == f"{tmp_path / 'topology.conf'}:{line}" and message in error.message


def test_topology_file_missing_or_empty(tmp_path) -> None:
    error = refused(tmp_path, '[machine]\ntopology = "nowhere.conf"\n')
    assert error.where.endswith(": machine.topology") and "not found" in error.message
    error = refused(tmp_path, '[machine]\ntopology = "topology.conf"\n', "# nothing\n")
    assert "no leaf switch" in error.message


def test_unknown_application_lists_the_papers(tmp_path) -> None:
    error = refused(tmp_path, 'apps = ["MILC", "Laghos", "LBANN"]\n')
    assert "apps" in str(error.where) and "unknown application 'MILC'" in error.message
    assert all(app in error.message for app in PAPER_APPS)
    error = refused(tmp_path, f"apps = {list(PAPER_APPS[:6])!r}\n".replace("'", '"'))
    assert "lacks sw4lite" in error.message


def test_calibration_overrides_an_application(tmp_path) -> None:
    """[calibration.<app>] sets parameters of the table the trials use; the rest stay."""
    from rush.contention.apps import APPS, DEFAULT_APPS, use_apps

    spec = load_study_spec(study(tmp_path, "[calibration.Laghos]\ncompute = 0.4\nlatency = 0.55\n"))
    assert spec.apps == {"Laghos": {"compute": 0.4, "latency": 0.55}}
    try:
        use_apps(spec.apps)
        assert APPS["Laghos"].latency == 0.55 and APPS["Laghos"].compute == 0.4
        assert APPS["Laghos"].bandwidth == DEFAULT_APPS["Laghos"].bandwidth
        assert APPS["SWFFT"] == DEFAULT_APPS["SWFFT"]
    finally:
        use_apps({})
    assert APPS == DEFAULT_APPS
    error = refused(tmp_path, "[calibration.Laghos]\nlatency = 0.6\n")
    assert "sum to 1.1" in error.message and error.where.endswith("calibration.Laghos")
    assert "must be 1" in str(error.fix)
    error = refused(tmp_path, "[calibration.MILC]\nio = 0.1\n")
    assert "unknown application 'MILC'" in error.message and all(a in str(error.fix) for a in PAPER_APPS)


def test_unknown_scenario_lists_the_papers(tmp_path) -> None:
    error = refused(tmp_path, 'scenarios = ["ADAA", "FOO"]\n')
    assert "scenarios[1]" in str(error.where) and "unknown scenario 'FOO'" in error.message
    assert "ADAA, ADPA, PDPA, WS, SS" in error.message
    with pytest.raises(ConfigError, match="unknown scenario XX") as caught:
        check_scenarios(["adaa", "xx"])
    assert caught.value.where == "--scenario"
    assert (
        check_scenarios(["ws", "ADAA", "ws"]) == ("WS", "ADAA")
        and check_scenarios(["all"]) == PAPER_SCENARIOS
    )


def test_variants_are_checked_on_the_studys_machine(tmp_path) -> None:
    paper = load_study_spec(None)
    default, multipod, onoff = check_variants(paper, []) + check_variants(paper, ["multipod", "onoff"])
    assert default is paper
    assert multipod.machine_args == {**PAPER_MACHINE, "pod_size": 128, "name": "multipod"}
    assert onoff.noise_args == {**PAPER_NOISE, "mode": "switching"} and onoff.machine_args == PAPER_MACHINE
    (longnoise,) = check_variants(paper, ["longnoise"])
    assert longnoise.noise_args == {**PAPER_NOISE, "change_every": 900.0}
    assert longnoise.noise().change_every == 900.0 and longnoise.machine_args == PAPER_MACHINE
    small = load_study_spec(study(tmp_path, "[machine]\nnodes = 96\n"))
    with pytest.raises(ConfigError, match="not a multiple of machine.pod_size 128") as caught:
        check_variants(small, ["multipod"])
    assert caught.value.where == f"--variant multipod on {tmp_path / 'study.toml'}: machine.pod_size"
    with pytest.raises(ConfigError, match="unknown variant"):
        check_variants(paper, ["tapered"])


def test_spec_builds_the_simulators_dataclasses(tmp_path) -> None:
    """The simulator's Machine and NoiseSpec take the spec's arguments as they are, and the
    spec's defaults and names are the simulator's (one truth for the paper's set-up)."""
    from rush.contention import apps
    from rush.contention.machine import MULTIPOD, Machine
    from rush.contention.noise import NoiseSpec

    spec = load_study_spec(None)
    assert spec.machine() == Machine() and spec.noise() == NoiseSpec()
    multipod, onoff = check_variants(spec, ["multipod", "onoff"])
    assert multipod.machine() == MULTIPOD and onoff.noise() == NoiseSpec(mode="switching")
    assert set(PAPER_APPS) == set(apps.APP_NAMES)
    assert (THREE_APPS, PDPA_TRAINING) == (apps.THREE_APPS, apps.OTHER_FOUR)
    custom = load_study_spec(
        study(tmp_path, "[machine]\nnodes = 1024\npod_size = 256\n[noise]\nfraction = 0.5\n")
    )
    assert custom.machine().pods == 4 and custom.noise().fraction == 0.5


def test_keys_reference_is_current() -> None:
    assert keys_markdown() in DOC.read_text(), f"regenerate the table in {DOC} from keys_markdown()"


def test_the_docs_example_loads(tmp_path) -> None:
    example = re.search(r"```toml\n(.*?)```", DOC.read_text(), re.S)
    assert example, "the reference shows an example study file"
    (tmp_path / "topology.conf").write_text(topology(16, 32))
    spec = load_study_spec(study(tmp_path, example.group(1)))
    assert isinstance(spec, StudySpec) and spec.machine_args["nodes"] == 512


# -- the command: exit 2, the key named, nothing created ---------------------------------------

HOSTILE: dict[str, tuple[str, str | None, tuple[str, ...], str]] = {
    # name: (study file, topology.conf, extra flags, text the error must hold)
    "nan intensity": ("[noise]\nintensity = [nan, 1.0]\n", None, (), "noise.intensity[0]"),
    "negative intensity": ("[noise]\nintensity = [-0.5, 1.0]\n", None, (), "noise.intensity[0]"),
    "hi below lo": ("[noise]\nintensity = [0.9, 0.1]\n", None, (), "noise.intensity"),
    "nan fraction": ("[noise]\nfraction = nan\n", None, (), "noise.fraction"),
    "fraction over half": ("[noise]\nfraction = 0.75\n", None, (), "noise.fraction"),
    "negative period": ("[noise]\nchange_every = -60\n", None, (), "noise.change_every"),
    "tiny period": ("[noise]\nmean_on = 1e-9\n", None, (), "noise.mean_on"),
    "unknown mode": ('[noise]\nmode = "sometimes"\n', None, (), "noise.mode"),
    "too many nodes": ("[machine]\nnodes = 1000000\n", None, (), "machine.nodes"),
    "string nodes": ('[machine]\nnodes = "512"\n', None, (), "machine.nodes"),
    "leaf does not divide": ("[machine]\nnodes = 512\nleaf_size = 48\n", None, (), "machine.leaf_size"),
    "pod does not divide": ("[machine]\npod_size = 384\n", None, (), "machine.pod_size"),
    "taper below one": ("[machine]\nleaf_taper = 0.5\n", None, (), "machine.leaf_taper"),
    "unknown key": ("[machine]\nnodez = 512\n", None, (), "machine.nodez"),
    "toml syntax": ('scenarios = ["ADAA"]\n\n[noise\n', None, (), "study.toml:3"),
    "unknown app": ('apps = ["MILC"]\n', None, (), "apps"),
    "calibration: unknown app": ("[calibration.MILC]\nlatency = 0.3\n", None, (), "calibration.MILC"),
    "calibration: negative share": (
        "[calibration.Laghos]\nlatency = -0.1\n",
        None,
        (),
        "calibration.Laghos.latency",
    ),
    "calibration: nan rate": ("[calibration.SWFFT]\nnet_gbs = nan\n", None, (), "calibration.SWFFT.net_gbs"),
    "calibration: shares off one": ("[calibration.Laghos]\nlatency = 0.6\n", None, (), "calibration.Laghos"),
    "calibration: unknown key": (
        "[calibration.Laghos]\nlatncy = 0.4\n",
        None,
        (),
        "calibration.Laghos.latncy",
    ),
    "bad --policy": ("", None, ("--policy", "RUSH,SJF"), "--policy"),
    "unknown scenario": ('scenarios = ["ADAA", "XYZ"]\n', None, (), "scenarios[1]"),
    "511-node topology": (
        '[machine]\nnodes = 512\ntopology = "topology.conf"\n',
        topology(16, 32).replace("n[00480-00511]", "n[00480-00510]"),
        (),
        "machine.nodes",
    ),
    "node in two leaves": (
        '[machine]\ntopology = "topology.conf"\n',
        topology(16, 32) + "SwitchName=extra Nodes=n00007\n",
        (),
        "topology.conf:19",
    ),
    "bad --scenario": ("", None, ("--scenario", "ADAA,MILC"), "--scenario"),
    "bad --variant": ("", None, ("--variant", "paper", "--variant", "fattree"), "--variant"),
    "variant against the file": (
        "[machine]\nnodes = 96\n",
        None,
        ("--variant", "multipod"),
        "machine.pod_size",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_study_input_exits_2_and_creates_nothing(tmp_path, case) -> None:
    text, topo, flags, key = HOSTILE[case]
    config = study(tmp_path, text, topo)
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "rush", "experiment", "variability", "--config", str(config), *flags,
         "--out", str(out)],
        capture_output=True, text=True, env={**os.environ, "NICE": "10"}, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert key in proc.stderr and "fix:" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()
