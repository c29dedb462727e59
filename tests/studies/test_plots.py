"""rush.studies.plots: one module per output family, the Agg backend chosen in one place."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from matplotlib.image import imread

from rush.studies.plots import pyplot
from rush.studies.plots.runtime_classes import plot

REPO = Path(__file__).resolve().parents[2]


def test_the_backend_is_chosen_only_in_the_plots_package() -> None:
    calls = [
        str(path.relative_to(REPO))
        for folder in ("rush", "sim")
        for path in sorted((REPO / folder).rglob("*.py"))
        for line in path.read_text().splitlines()
        if re.search(r"matplotlib\.use\(|\buse\([\"']Agg", line)
    ]
    assert calls == ["rush/studies/plots/__init__.py"]
    assert pyplot().get_backend().lower() == "agg"


def test_runtime_class_plot_writes_one_png_per_trace(tmp_path: Path) -> None:
    days = np.arange(1, 31) * 86400.0
    rows = [
        {
            "trace": trace,
            "policy": policy,
            "variant": variant,
            "cumulative": (days, scale * (1 + np.log1p(days))),
        }
        for trace in ("A", "B")
        for policy in ("FCFS", "SPF")
        for variant, scale in (("base", 2.0), ("kill", 1.0))
    ]
    plot(rows, tmp_path)
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["cumulative_bsld_A.png", "cumulative_bsld_B.png"]
    image = imread(tmp_path / "cumulative_bsld_A.png")
    assert image.shape[:2] == (405, 1080)  # 12 x 4.5 inches at 90 dpi, as the committed plots
    assert not pyplot().get_fignums()  # every figure closed after saving
