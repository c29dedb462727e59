"""Plots of the mixed-policy study (``rush experiment mixed``)."""

from __future__ import annotations

from typing import Any

from rush.studies.plots import pyplot


def plot_trace(spec: str, data: dict) -> Any:
    """Per-week mean bsld (log scale): one panel per method with w*, best pure, SAF, w_train, w_greedy."""
    plt = pyplot()

    weeks = data["weeks"]
    methods = list(data["summary"])
    figure, axes = plt.subplots(
        len(methods) or 1, 1, figsize=(10, 3.2 * max(1, len(methods))), sharex=True, squeeze=False
    )
    x = [w["week"] for w in weeks]
    test_start = data["test_weeks"][0] if data["test_weeks"] else None
    for ax, method in zip(axes[:, 0], methods, strict=False):
        m = [w["methods"][method] for w in weeks]
        ax.plot(x, [w["best_pure_bsld"] for w in weeks], color="0.4", lw=1.2, label="best pure (per week)")
        ax.plot(x, [w["saf_bsld"] for w in weeks], color="tab:orange", lw=1, label="SAF")
        ax.plot(x, [v["bsld_star"] for v in m], color="tab:blue", lw=1.4, label="w* (per week)")
        test = [(w["week"], v["bsld_train"]) for w, v in zip(weeks, m, strict=True) if w["split"] == "test"]
        if test:
            ax.plot(*zip(*test, strict=True), color="tab:green", lw=1, ls="--", label="w*_train (test weeks)")
        ax.plot(x, [v["bsld_greedy"] for v in m], color="tab:red", lw=0.8, ls=":", label="w_greedy")
        if test_start is not None:
            ax.axvline(test_start - 0.5, color="k", lw=0.6)
        ax.set_yscale("log")
        ax.set_ylabel("mean bsld")
        ax.set_title(f"{spec}: {method} ({', '.join(data['trained'][method]['features'])})", fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
    axes[0, 0].legend(fontsize=7, ncol=5, loc="upper left")
    axes[-1, 0].set_xlabel("week of the trace (vertical line: start of the test half)")
    figure.tight_layout()
    return figure


def close(figure: Any) -> None:
    """Free a figure of :func:`plot_trace` once it is saved (pyplot keeps every open figure)."""
    pyplot().close(figure)
