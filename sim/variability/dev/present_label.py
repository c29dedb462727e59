"""Round six's change o: the all-application model trained on the present-state oracle's answer.

    python sim/variability/dev/present_label.py OUT

Reruns the committed paper campaign (4 hours, seed 0) with a recorder in the oracle's place that
never flags (so the campaign's decisions, and its records, are the committed ones: checked) and
notes, for every control run as it starts, the present-state oracle's answer on its nodes with the
committed bar: "started now on these nodes, in the state of now, would it exceed its bar?". Then
the study's 300 s dataset, each row's label replaced by that answer (class "variation" when yes;
otherwise "none" or, for a run that varied anyway, "little"), AdaBoost trained as the study does.
Writes ``OUT/paper/models/`` for ``move_diag.py`` (``RUSH_DEV_MODELS=OUT/paper``). Development only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main(out: str) -> None:
    import rush.contention.campaign as campaign
    from rush.contention.experiment import cell_machine
    from rush.contention.oracles import PresentStateOracle
    from rush.contention.state import Fabric
    from rush.models.variability.dataset import DatasetOptions, build_dataset
    from rush.models.variability.train import TrainOptions, train_variability
    from rush.studies.contention import ContentionStudy, _spec

    base = Path(out) / "paper"
    camp, models = base / "campaign", base / "models"
    models.mkdir(parents=True, exist_ok=True)
    committed = json.loads((ROOT / "paper" / "models" / "prepare.json").read_text())
    present = PresentStateOracle(committed["thresholds"])
    answer: dict[str, bool] = {}

    def recorder(state, asked):  # the oracle's answer noted, never a flag: decisions unchanged
        for (spec, _nodes), flag in zip(asked, present(state, asked), strict=True):
            answer[str(spec.job_id)] = bool(flag)
        return [False] * len(asked)

    simulation = campaign.Simulation

    class Recording(simulation):  # type: ignore[misc, valid-type]
        def __post_init__(self) -> None:
            super().__post_init__()
            self.oracle = recorder

    campaign.Simulation = Recording
    try:
        study = ContentionStudy(Path(out), ["ADAA"], 1, 0, 4.0)
        machine, noise = cell_machine({"study_spec": _spec(study, "paper")})
        campaign.run_campaign(camp, 4.0, 0, "dev/present_label.py", Fabric(machine, noise), noise)
    finally:
        campaign.Simulation = simulation

    def runs(path: Path) -> list[str]:  # the records but their header (command, date)
        return [line for line in path.read_text().splitlines() if '"format"' not in line]

    if runs(camp / "records.jsonl") != runs(ROOT / "paper" / "campaign" / "records.jsonl"):
        raise SystemExit("the rerun campaign differs from the committed one")
    dataset = build_dataset(
        camp / "records.jsonl", camp / "store.db", DatasetOptions(window=300.0, scopes=("job", "all"))
    )
    label = np.array([answer[str(j)] for j in dataset.job_ids])
    varied = dataset.y_binary.astype(bool)
    print(
        f"runs {len(label)}; varied {int(varied.sum())}; oracle yes {int(label.sum())}; both {int((label & varied).sum())}"
    )
    dataset.y_binary = label.astype(np.int64)
    dataset.y_class = np.where(label, 2, np.where(varied, 1, 0)).astype(np.int64)
    model = train_variability(
        dataset, TrainOptions(seed=0, models=("adaboost",), n_estimators=100, final_scope="best")
    )
    card = model.save(models / "variability-all.joblib")
    report = model.report()
    meta = {
        "models": {
            "all": {
                "path": "paper/models/variability-all.joblib",
                "flag_threshold": card.get("flag_threshold"),
            }
        },
        "thresholds": committed["thresholds"],
        "label": "present-state oracle's answer at the run's start",
        "cv_table": report["cv_table"],
        "features": report["features"],
    }
    (models / "prepare.json").write_text(json.dumps(meta, indent=1))
    print(json.dumps({k: meta[k] for k in ("models", "features")}, indent=1))
    print(json.dumps(report["cv_table"], indent=1)[:2000])


if __name__ == "__main__":
    main(*sys.argv[1:])
