"""Round six's change o: the all-application model trained on the present-state oracle's answer.

    python sim/variability/dev/present_label.py OUT

Now a thin caller of the study's code (``rush experiment variability --label present-state`` or
``--policy RUSH-PRESENT-LABEL`` makes the same model, ``present-all``, in the study's directory):
copies the committed paper campaign's records to ``OUT/paper/campaign``, reruns the campaign with
the present-state recorder in the oracle's place (checked to give the committed records;
:func:`rush.studies.contention_labels.present_state_answers`), relabels the study's 300 s dataset
with the oracle's answer at each control run's start
(:func:`rush.studies.contention_labels.relabel_present_state`) and trains AdaBoost as the
committed study does. Writes ``OUT/paper/models/`` for ``move_diag.py``
(``RUSH_DEV_MODELS=OUT/paper``). Development only.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from rush.studies.script_args import run_main

ROOT = Path(__file__).resolve().parents[1]


def main(out: str) -> None:
    from rush.contention.experiment import cell_machine
    from rush.contention.state import Fabric
    from rush.models.variability.dataset import DatasetOptions, build_dataset
    from rush.studies.contention import WINDOW, ContentionStudy, _spec, _train
    from rush.studies.contention_labels import present_state_answers, relabel_present_state

    base = Path(out) / "paper"
    camp, models = base / "campaign", base / "models"
    camp.mkdir(parents=True, exist_ok=True)
    models.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "paper" / "campaign" / "records.jsonl", camp / "records.jsonl")
    committed = json.loads((ROOT / "paper" / "models" / "prepare.json").read_text())
    study = ContentionStudy(Path(out), ["ADAA"], 1, 0, 4.0, train_models=("adaboost",))
    machine, noise = cell_machine({"study_spec": _spec(study, "paper")})
    answers = present_state_answers(camp, 4.0, 0, Fabric(machine, noise), noise, committed["thresholds"])
    dataset = build_dataset(
        camp / "records.jsonl", camp / "store.db", DatasetOptions(window=WINDOW, scopes=("job", "all"))
    )
    varied = dataset.y_binary.astype(bool)
    relabel_present_state(dataset, answers)
    label = dataset.y_binary.astype(bool)
    print(
        f"runs {len(label)}; varied {int(varied.sum())}; oracle yes {int(label.sum())}; both {int((label & varied).sum())}"
    )
    entry, trained = _train(study, dataset, models / "variability-all.joblib")
    meta = {
        "models": {"all": entry},
        "thresholds": committed["thresholds"],
        "label": "present-state",
        "cv_table": trained["cv_table"],
        "features": trained["features"],
    }
    (models / "prepare.json").write_text(json.dumps(meta, indent=1))
    print(json.dumps({k: meta[k] for k in ("models", "features")}, indent=1))
    print(json.dumps(trained["cv_table"], indent=1)[:2000])


if __name__ == "__main__":
    run_main(main, description=__doc__.splitlines()[0])
