"""Round 6: the ``base`` and ``t23`` feature sets side by side (``dev_log.md``'s criterion).

Reads what ``run.py`` wrote for each set (``results/parts/`` for ``base``,
``results/feature_set_t23/parts/`` for ``t23``) and writes ``results/feature_sets.{csv,md}``:
per trace, plain class accuracy, the FCFS and SPF classification-idempotent shares of the
class-clairvoyant gain and their kills, and the mean absolute error of the start estimate at
submit (quantiles-mean, every job), each set's figure and the difference.

    python sim/runtime_predictions/estimates/run.py --traces KTH-SP2 --feature-set t23   # per trace
    python sim/runtime_predictions/estimates/feature_sets.py
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from run import OUT, TRACES, results_dir, write_table  # noqa: E402

SETS = ("base", "t23")


def parts_dir(feature_set: str) -> Path:
    return results_dir(feature_set) / "parts"


def figures(part: dict) -> dict:
    out: dict = {}
    for row in part.get("classes", []):
        if row["decision"] == "plain":
            out["accuracy"] = row["accuracy"]
    for row in part.get("gain", []):
        if row["variant"] == "classification-idempotent":
            out[f"{row['policy']}_idempotent_share"] = row["share_of_bound"]
            out[f"{row['policy']}_kills"] = row["kills"]
    for row in part.get("estimates", []):
        if (row["moment"], row["wait_class"], row["estimator"]) == ("submit", "all", "quantiles-mean"):
            out["mae_at_submit_min"] = row["mae_min"]
    return out


def main() -> None:
    rows = []
    for trace in TRACES:
        found = {}
        for feature_set in SETS:
            path = parts_dir(feature_set) / f"{trace}.json"
            if path.exists():
                part = json.loads(path.read_text())
                if part["model"].get("feature_set", "base") != feature_set:
                    raise SystemExit(f"{path} holds feature set {part['model'].get('feature_set')}")
                found[feature_set] = figures(part)
        if len(found) < 2:
            continue
        row: dict = {"trace": trace}
        for key in found["base"]:
            for feature_set in SETS:
                row[f"{key} {feature_set}"] = found[feature_set].get(key)
            a, b = found["base"].get(key), found["t23"].get(key)
            row[f"{key} diff"] = None if a is None or b is None else b - a
        rows.append(row)
    write_table(OUT, "feature_sets", rows, missing="")
    print((OUT / "feature_sets.md").read_text())


if __name__ == "__main__":
    # No options: a flag given is refused (exit 2), not ignored while the files are rewritten.
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
