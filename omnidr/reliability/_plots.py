"""The figures of the reliability reports (matplotlib, headless)."""

from pathlib import Path


def group_bars(path: Path, groups: list[str], series: dict[str, list[float | None]], xlabel: str) -> Path:
    """Horizontal bars, one row per group and one bar per series (a None value draws no bar); shares in 0-1."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    y = np.arange(len(groups))
    height = 0.8 / max(1, len(series))
    fig, ax = plt.subplots(figsize=(6.5, max(2.2, 0.32 * len(groups) * len(series) + 1.2)), dpi=100)
    for k, (name, values) in enumerate(series.items()):
        ax.barh(y + k * height, [100 * v if v is not None else 0.0 for v in values], height, label=name)
    ax.set_yticks(y + height * (len(series) - 1) / 2, groups, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel(xlabel)
    if len(series) > 1:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
