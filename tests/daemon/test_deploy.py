"""deploy/: the example config loads, the alert rules fire when they should (promtool), the
scrape config and the systemd unit verify, and the dashboard only uses exported metrics."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rush.planner.config import load_config
from rush.planner.metrics import DaemonMetrics

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
ALERTS = DEPLOY / "prometheus" / "rush-alerts.yml"
INSTANCE = "node1:9877"


def exported_names() -> set[str]:
    names = set()
    for family in DaemonMetrics().registry.collect():
        names.add(family.name)
        names |= {sample.name for sample in family.samples}
        if family.type == "counter":
            names.add(family.name + "_total")
        if family.type == "histogram":
            names |= {family.name + s for s in ("_bucket", "_sum", "_count")}
    return names


def used_names(text: str) -> set[str]:
    return set(re.findall(r"\brush_[a-z_]+\b", text))


def test_example_config_loads():
    config = load_config(DEPLOY / "rush.toml")
    assert config.rjms.backend == "slurm" and config.daemon.dry_run


def test_alerts_and_dashboard_use_exported_metrics():
    exported = exported_names()
    rules = ALERTS.read_text()
    dashboard = (DEPLOY / "grafana" / "rush-dashboard.json").read_text()
    assert used_names(rules) and used_names(dashboard)
    assert used_names(rules) <= exported, used_names(rules) - exported
    assert used_names(dashboard) <= exported, used_names(dashboard) - exported
    panels = json.loads(dashboard)["panels"]
    assert all(p["targets"] for p in panels)


def promtool() -> str:
    tool = shutil.which("promtool")
    if tool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    return tool


def test_prometheus_files_are_valid():
    tool = promtool()
    for argv in (
        ["check", "rules", str(ALERTS)],
        ["check", "config", str(DEPLOY / "prometheus" / "rush-scrape.yml")],
    ):
        out = subprocess.run([tool, *argv], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr


def expected(alert: str) -> dict:
    """The alert's labels and annotations as the rules file defines them, for INSTANCE."""
    for group in yaml.safe_load(ALERTS.read_text())["groups"]:
        for rule in group["rules"]:
            if rule["alert"] == alert:
                annotations = {
                    k: v.replace("{{ $labels.instance }}", INSTANCE) for k, v in rule["annotations"].items()
                }
                labels = {**rule["labels"], "job": "rush", "instance": INSTANCE}
                return {"exp_labels": labels, "exp_annotations": annotations}
    raise KeyError(alert)


def test_alert_rules_fire_when_they_should(tmp_path):
    tool = promtool()
    series = f'{{job="rush", instance="{INSTANCE}"}}'
    tests = {
        "rule_files": [str(ALERTS)],
        "evaluation_interval": "1m",
        "tests": [
            {  # a healthy daemon: nothing fires
                "interval": "1m",
                "input_series": [
                    {"series": f"up{series}", "values": "1x40"},
                    {"series": f"rush_last_successful_cycle_timestamp_seconds{series}", "values": "0+60x40"},
                    {
                        "series": f'rush_cycles_total{{job="rush", instance="{INSTANCE}", outcome="ok"}}',
                        "values": "0+1x40",
                    },
                    {"series": f"rush_rjms_errors_total{series}", "values": "0x40"},
                ],
                "alert_rule_test": [
                    {"eval_time": "30m", "alertname": a, "exp_alerts": []}
                    for a in (
                        "RushDaemonDown",
                        "RushCyclesFailing",
                        "RushRJMSErrorsRising",
                        "RushNoSuccessfulCycle",
                    )
                ],
            },
            {  # slurmctld down from minute 5: every cycle fails, no success since
                "interval": "1m",
                "input_series": [
                    {"series": f"up{series}", "values": "1x40"},
                    {
                        "series": f"rush_last_successful_cycle_timestamp_seconds{series}",
                        "values": "0 60 120 180 240 300x40",
                    },
                    {
                        "series": f'rush_cycles_total{{job="rush", instance="{INSTANCE}", outcome="ok"}}',
                        "values": "0 1 2 3 4 5x40",
                    },
                    {
                        "series": f'rush_cycles_total{{job="rush", instance="{INSTANCE}", outcome="rjms_error"}}',
                        "values": "0x5 1+1x40",
                    },
                    {"series": f"rush_rjms_errors_total{series}", "values": "0x5 1+1x40"},
                ],
                "alert_rule_test": [
                    {"eval_time": "4m", "alertname": "RushCyclesFailing", "exp_alerts": []},
                    {
                        "eval_time": "25m",
                        "alertname": "RushCyclesFailing",
                        "exp_alerts": [expected("RushCyclesFailing")],
                    },
                    {
                        "eval_time": "25m",
                        "alertname": "RushRJMSErrorsRising",
                        "exp_alerts": [expected("RushRJMSErrorsRising")],
                    },
                    {"eval_time": "15m", "alertname": "RushNoSuccessfulCycle", "exp_alerts": []},
                    {
                        "eval_time": "25m",
                        "alertname": "RushNoSuccessfulCycle",
                        "exp_alerts": [expected("RushNoSuccessfulCycle")],
                    },
                    {"eval_time": "25m", "alertname": "RushDaemonDown", "exp_alerts": []},
                ],
            },
            {  # the daemon process is gone
                "interval": "1m",
                "input_series": [{"series": f"up{series}", "values": "1 1 0x20"}],
                "alert_rule_test": [
                    {"eval_time": "4m", "alertname": "RushDaemonDown", "exp_alerts": []},
                    {
                        "eval_time": "10m",
                        "alertname": "RushDaemonDown",
                        "exp_alerts": [expected("RushDaemonDown")],
                    },
                ],
            },
        ],
    }
    path = tmp_path / "rush-alerts.test.yml"
    path.write_text(yaml.safe_dump(tests))
    out = subprocess.run([tool, "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_systemd_unit(tmp_path):
    unit = (DEPLOY / "rush.service").read_text()
    service = dict(
        line.split("=", 1) for line in unit.splitlines() if "=" in line and not line.startswith("#")
    )
    assert service["Type"] == "simple" and service["Restart"] == "on-failure"
    assert service["ExecStart"] == "/usr/local/bin/rush daemon --config /etc/rush/rush.toml"
    assert "slurmctld.service" in service["After"] and service["NoNewPrivileges"] == "yes"
    assert service["ProtectSystem"] == "strict" and "/var/lib/rush" in service["ReadWritePaths"]
    assert verify_units(tmp_path, {"rush.service": unit}) == []


def verify_units(tmp_path: Path, units: dict[str, str]) -> list[str]:
    """``systemd-analyze verify`` of these unit files (name -> text): its complaints about them.

    systemd-analyze checks that ExecStart exists: rush is pointed at the entry point of the
    environment running the tests (.venv/bin/rush), else PATH's."""
    beside = Path(sys.executable).with_name("rush")
    analyze = shutil.which("systemd-analyze")
    rush = str(beside) if beside.exists() else shutil.which("rush")
    if analyze is None or rush is None:
        pytest.skip("systemd-analyze (Debian package systemd) or the rush entry point is not installed")
    paths = []
    for name, text in units.items():
        paths.append(tmp_path / name)
        paths[-1].write_text(text.replace("/usr/local/bin/rush", rush))
    out = subprocess.run([analyze, "verify", *map(str, paths)], capture_output=True, text=True, timeout=60)
    stems = tuple(Path(name).stem for name in units)
    return [
        line
        for line in (out.stdout + out.stderr).splitlines()
        if line.strip() and any(s in line for s in stems)
    ]


def test_weekly_retraining_units(tmp_path):
    """rush-retrain.timer starts rush-retrain.service weekly: export, train beside the model in
    use, swap it in only after both steps passed, then restart the daemon if it runs."""
    unit = (DEPLOY / "rush-retrain.service").read_text()
    lines = [line for line in unit.splitlines() if "=" in line and not line.startswith("#")]
    starts = [line.split("=", 1)[1] for line in lines if line.startswith("ExecStart=")]
    assert len(starts) == 3 and "sacct --json" in starts[0] and "mv -f" in starts[0]
    assert "rush train runtime-class" in starts[1] and "runtime-class.next.joblib" in starts[1]
    assert starts[2].index("runtime-class.joblib.json") < starts[2].index("runtime-class.joblib'")
    service = dict(line.split("=", 1) for line in lines)
    assert service["Type"] == "oneshot" and service["User"] == "rush"
    assert service["ExecStartPost"] == "+/bin/systemctl try-restart rush.service"
    timer = (DEPLOY / "rush-retrain.timer").read_text()
    assert "OnCalendar=Mon *-*-* 03:00:00" in timer and "Persistent=true" in timer
    assert verify_units(tmp_path, {"rush-retrain.service": unit, "rush-retrain.timer": timer}) == []
