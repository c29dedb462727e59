"""The five scheduling variants run through the same core, and the CLI's classification block."""

from __future__ import annotations

import json

import numpy as np

from rush.core.config import CoreConfig
from rush.models.walkforward import predict_classes_walkforward
from rush.simulator.engine import simulate
from rush.studies.runtime_variants import VARIANTS, variant_inputs
from tests.core.properties import assert_valid_schedule
from tests.models.fixtures import kth, small_forest


def test_variants_on_kth_prefix():
    w, header = kth(4000)
    wf = predict_classes_walkforward(w, header, estimator=small_forest())
    trace = type("T", (), {"header": header})()
    results = {}
    for variant in VARIANTS:
        inputs, kwargs, quality = variant_inputs(variant, trace, w, walkforward=wf)
        result = simulate(w, CoreConfig.from_names("SPF", "easy", 200_000, **kwargs), inputs)
        results[variant] = result
        if variant in ("base", "runtime-clairvoyant"):
            assert quality is None
        else:
            assert 0.5 < quality["accuracy"] <= 1
    # Kills happen only with the idempotent variant's false smalls; clairvoyant classes have none.
    kills = results["classification-idempotent"].requeues
    # Every false small (predicted small, ran past its divider) is killed exactly once.
    assert kills.sum() == wf.summary()["confusion"]["FS"] and kills.max() == 1
    assert results["class-clairvoyant"].requeues.sum() == 0
    assert results["classification"].requeues.sum() == 0
    for variant in ("base", "classification", "runtime-clairvoyant"):
        r = results[variant]
        assert (r.start >= r.submit).all() and (r.start >= 0).all()
    assert_valid_schedule(results["runtime-clairvoyant"])
    # Killed jobs keep their submit time and end as large.
    killed = np.flatnonzero(kills > 0)
    assert (results["classification-idempotent"].attributes["runtime_class"][killed] == 1).all()


def test_simulate_cli_classes_block(tmp_path):
    import numpy as np

    from rush.workload.swf import write_swf
    from tests.models.fixtures import kth_trace
    from tests.rush_cli import rush

    # KTH-SP2's first 3,000 jobs (about 6 weeks): the walk-forward refits the boosted
    # classifier weekly, so the whole trace would take minutes.
    swf = tmp_path / "kth-prefix.swf"
    write_swf(kth_trace().subset(np.arange(3000)), swf)
    out = rush("simulate", str(swf), "--policy", "FCFS", "--classes", "idempotent", "--json")
    assert out.returncode == 0, out.stderr
    block = json.loads(out.stdout)["classification"]
    assert set(block) >= {
        "accuracy",
        "precision",
        "recall",
        "false_small_rate",
        "false_large_rate",
        "kills",
        "wasted_area",
    }
    assert block["kills"] > 0 and block["wasted_area"] > 0
    bad = rush("simulate", "lublin:100:16", "--classes", "maybe")
    assert bad.returncode == 2 and "unknown --classes" in bad.stderr
