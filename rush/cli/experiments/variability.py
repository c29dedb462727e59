"""``rush experiment variability``: RUSH vs FCFS+EASY in the contention simulator (Nichols et al., IPDPS 2022).

Heavy modules are imported inside the command: ``rush --help`` imports this module.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    app.command("variability")(variability_command)


def variability_command(
    scenario: str | None = typer.Option(
        None,
        "--scenario",
        help="ADAA | ADPA | PDPA | WS | SS | all (comma-separated) [default: the study file's, else all].",
        show_default=False,
    ),
    config: Path | None = typer.Option(
        None,
        "--config",
        metavar="STUDY.TOML",
        help="A study file (TOML: [machine], [noise], scenarios); default: the paper's set-up. "
        "Keys: docs/reference/variability-study.md.",
    ),
    variant: list[str] = typer.Option(
        [],
        "--variant",
        metavar="NAME",
        help="paper | multipod (pods of 128, 4:1 tapered) | onoff (noise switched on and off) | "
        "longnoise (noise levels held 900 s); "
        "repeatable [default: paper].",
        show_default=False,
    ),
    trials: int = typer.Option(
        5,
        "--trials",
        help="Paired trials per scenario (each runs FCFS+EASY, RUSH with skip limits 10, 30 and none, "
        "and the PRESENT-ORACLE and NOISE-ORACLE diagnostics).",
    ),
    first_trial: int = typer.Option(
        0,
        "--first-trial",
        help="Number of the first trial (its seeds): report on trials never used in development.",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the campaign, the models and the trials."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="Keep campaign/, models/, results/ and plots/ here (default: a temporary directory).",
    ),
    campaign_hours: float = typer.Option(
        12.0, "--campaign-hours", help="Simulated hours of the training campaign."
    ),
    cluster: str = typer.Option(
        "serial", "--cluster", help="Where trials run: serial | local | local:N (rush.studies.sweep)."
    ),
    scale: float = typer.Option(
        1.0, "--scale", help="Fraction of the published job counts (tests use less)."
    ),
    fresh: bool = typer.Option(False, "--fresh", help="Redo the campaign, the models and every trial."),
    train_models: str = typer.Option(
        "all", "--train-models", help="Model kinds compared in training (comma-separated), or all."
    ),
    estimators: int = typer.Option(100, "--estimators", help="Trees / boosting rounds per model."),
    policy: str = typer.Option(
        "all",
        "--policy",
        help="Policies to run (comma-separated), or all: FCFS+EASY, RUSH, RUSH-30, RUSH-UNLIMITED, "
        "RUSH-MOVE, PRESENT-ORACLE, NOISE-ORACLE, CLAIRVOYANT-ORACLE, RUSH-SIZE (a flag threshold per job "
        "size), RUSH-PRESENT-LABEL (RUSH with the model trained on the present-state label), "
        "RUSH-MOVE-PRESENT-LABEL (RUSH-MOVE with that model). A rerun with more reuses the finished trials.",
    ),
    reference_hours: float = typer.Option(
        12.0,
        "--reference-hours",
        help="Simulated hours of the 16-node reference queue whose runs set each application's bar "
        "(mu + 1.5 sigma).",
    ),
    label: str = typer.Option(
        "variation",
        "--label",
        help="Labels the models learn (comma-separated): variation (did the run vary; RUSH's) and "
        "present-state (the present-state oracle's answer at the run's start, a simulator ground truth; "
        "RUSH-PRESENT-LABEL's and RUSH-MOVE-PRESENT-LABEL's, trained whenever one of them runs).",
    ),
    prepare_only: bool = typer.Option(
        False, "--prepare-only", help="Make the bar, the campaign and the models, run no trial."
    ),
) -> None:
    """Campaign, models and paired trials of FCFS+EASY and RUSH per scenario; tables and plots."""
    import tempfile

    from rush.contention.spec import check_scenarios, check_variants, load_study_spec

    # Everything is checked before anything is created (bad input: exit 2, no directory); the
    # study file first, before the simulator's modules are imported.
    spec = load_study_spec(config)
    names = list(spec.scenarios if scenario is None else check_scenarios(scenario.split(",")))
    variants = tuple(v.variant_name for v in check_variants(spec, variant))

    from rush.errors import ConfigError
    from rush.models.variability.train import TrainOptions
    from rush.studies.contention import ContentionStudy, check_args, check_policies, run_study
    from rush.studies.contention import prepare_only as prepare_only_

    check_args(names, trials, seed, campaign_hours, scale)
    policies = check_policies(policy)
    from rush.studies.contention_labels import check_labels

    labels = check_labels(label)
    from rush.contention.labels import policy_label

    if any(policy_label(p) == "present-state" for p in policies) and "present-state" not in labels:
        labels = (*labels, "present-state")
    if not 0.1 <= reference_hours <= 48.0:  # also refuses NaN
        raise ConfigError(
            f"--reference-hours must be 0.1 to 48, got {reference_hours}",
            where="--reference-hours",
            fix="e.g. 12",
        )
    if not 0 <= first_trial <= 1_000_000:
        raise ConfigError(
            f"--first-trial must be 0 to 1000000, got {first_trial}", where="--first-trial", fix="e.g. 1000"
        )
    kinds = (
        None if train_models.strip().lower() == "all" else tuple(m.strip() for m in train_models.split(","))
    )
    try:
        TrainOptions(models=kinds or TrainOptions().models, n_estimators=estimators).checked()
    except ConfigError as exc:  # name this command's flags
        flag = {"--models": "--train-models"}.get(exc.where or "", exc.where)
        raise ConfigError(exc.message, where=flag, fix=exc.fix) from None
    with tempfile.TemporaryDirectory(prefix="rush-variability-") as tmp:
        where = out or Path(tmp)
        study = ContentionStudy(
            where, names, trials, seed, campaign_hours, cluster=cluster, scale=scale, fresh=fresh,
            progress=not as_json, train_models=kinds, estimators=estimators, study_spec=spec,
            variants=variants, first_trial=first_trial, policies=policies, reference_hours=reference_hours,
            labels=labels,
        )  # fmt: skip
        if prepare_only:
            metas = prepare_only_(study)
            typer.echo(json.dumps({v: {k: m[k] for k in ("campaign", "thresholds", "training")}
                                   for v, m in metas.items()}, indent=1))  # fmt: skip
            return
        summary = run_study(study)
        if as_json:
            typer.echo(json.dumps(summary, indent=1))
            return
        _print(summary, where if out else None)


def _print(summary: dict, out: Path | None) -> None:
    for variant, c in summary["campaign"].items():
        if c is None:  # diagnostics only: no campaign, no model
            continue
        typer.echo(f"[{variant}] campaign: {c['runs']} runs over {c['hours']} h (seed {c['seed']}), "
                   f"{c['noise_episodes']} noise episodes")  # fmt: skip
        for name, t in summary["training"][variant].items():
            best = max(t["cv_table"], key=lambda r: r["mean_f1"])
            flag = t.get("flag_threshold") or {}
            typer.echo(f"  model {name}: {t['model']} ({t['scope']} nodes) on {t['rows']} runs "
                       f"({t['variation_runs']} with variation), LOAO mean F1 {best['mean_f1']:.2f}, "
                       f"flag threshold {flag.get('threshold')}")  # fmt: skip
    results = summary["results"]
    for variant, by_scenario in results["experiments"].items():
        for s, by_policy in by_scenario.items():
            typer.echo(f"\n[{variant}] {s}")
            for p, r in by_policy.items():
                d = results["paired"].get(variant, {}).get(s, {}).get(p)
                change = f", makespan {d['makespan_change_pct']['mean']:+.1f} %" if d else ""
                tag = " (diagnostic)" if r.get("diagnostic") else ""
                typer.echo(f"  {p + tag:<28} runs with variation {r['runs_with_variation']:5.1f} of {r['runs']:.0f}"
                           f" per trial, makespan {r['makespan_mean']:.0f} s{change}, mean wait {r['wait_mean']:.0f} s,"
                           f" starts at the skip limit {r['starts_at_limit_per_trial']:.1f}"
                           f" (flagged starts {r['flagged_starts_per_trial']:.1f})")  # fmt: skip
    if out:
        typer.echo(f"\nresults in {out / 'results'}, plots in {out / 'plots'}")
