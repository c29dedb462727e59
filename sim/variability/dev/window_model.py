"""Round six's change n: the all-application model on a shorter counter window (development only).

    python sim/variability/dev/window_model.py WINDOW_SECONDS OUT

Reruns the committed paper campaign (4 hours, seed 0: its records must come out as the committed
(but their header line) ``paper/campaign/records.jsonl``, checked), builds the all-application dataset with
counter windows of WINDOW_SECONDS instead of the study's 300 s, trains AdaBoost as the study does,
and writes ``OUT/paper/models/`` (the model, its card, ``prepare.json`` with the committed bar).
``move_diag.py`` reads it with ``RUSH_DEV_MODELS=OUT/paper``. Nothing committed is changed.
"""

from __future__ import annotations

import json
from pathlib import Path

from rush.studies.script_args import run_main

ROOT = Path(__file__).resolve().parents[1]


def main(window: str, out: str) -> None:
    from rush.contention.campaign import run_campaign
    from rush.contention.experiment import cell_machine
    from rush.contention.state import Fabric
    from rush.models.variability.dataset import DatasetOptions, build_dataset
    from rush.models.variability.train import TrainOptions, train_variability

    base = Path(out) / "paper"
    camp, models = base / "campaign", base / "models"
    models.mkdir(parents=True, exist_ok=True)
    committed = json.loads((ROOT / "paper" / "models" / "prepare.json").read_text())
    from rush.studies.contention import ContentionStudy, _spec

    machine, noise = cell_machine(
        {"study_spec": _spec(ContentionStudy(Path(out), ["ADAA"], 1, 0, 4.0), "paper")}
    )
    if not (camp / "store.db").is_file():
        run_campaign(camp, 4.0, 0, "dev/window_model.py", Fabric(machine, noise), noise)

    def runs(path: Path) -> list[str]:  # the records but their header (command, date)
        return [line for line in path.read_text().splitlines() if '"format"' not in line]

    if runs(camp / "records.jsonl") != runs(ROOT / "paper" / "campaign" / "records.jsonl"):
        raise SystemExit("the rerun campaign differs from the committed one")
    dataset = build_dataset(
        camp / "records.jsonl", camp / "store.db", DatasetOptions(window=float(window), scopes=("job", "all"))
    )
    model = train_variability(
        dataset, TrainOptions(seed=0, models=("adaboost",), n_estimators=100, final_scope="best")
    )
    path = models / "variability-all.joblib"
    card = model.save(path)
    report = model.report()
    meta = {
        "models": {
            "all": {
                "path": "paper/models/variability-all.joblib",
                "flag_threshold": card.get("flag_threshold"),
            }
        },
        "thresholds": committed["thresholds"],
        "window": float(window),
        "cv_table": report["cv_table"],
        "features": report["features"],
    }
    (models / "prepare.json").write_text(json.dumps(meta, indent=1))
    print(json.dumps({k: meta[k] for k in ("window", "models", "features")}, indent=1))
    print(json.dumps(report["cv_table"], indent=1)[:3000])


if __name__ == "__main__":
    run_main(main, description=__doc__.splitlines()[0])
