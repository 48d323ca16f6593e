"""The pass-rate histogram of a filter run: counts per k/n and a PNG with the band shaded.

Uses matplotlib's Agg backend (no display needed). Not covered: per-data-source breakdowns
(the per-prompt table ``pass_rates.parquet`` has ``data_source`` for that).
"""

from __future__ import annotations

from pathlib import Path


def histogram_counts(rates: list[float], n: int) -> dict[str, int]:
    """Prompts per number of correct samples, keyed ``"k/n"``.

    >>> histogram_counts([0.0, 0.5, 0.5, 1.0], 2)
    {'0/2': 1, '1/2': 2, '2/2': 1}
    """
    counts = [0] * (n + 1)
    for r in rates:
        counts[round(r * n)] += 1
    return {f"{k}/{n}": c for k, c in enumerate(counts)}


def plot_histogram(
    rates: list[float], n: int, band: tuple[float, float], path: str | Path, title: str = ""
) -> Path:
    """Bar chart of prompts per pass rate k/n, the keep band shaded; returns the PNG path."""
    import matplotlib  # ~1 s; only the PNG needs it (the filter imports this module at start-up)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # same

    counts = list(histogram_counts(rates, n).values())
    xs = [k / n for k in range(n + 1)]
    kept = sum(c for x, c in zip(xs, counts, strict=True) if band[0] <= x <= band[1])
    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=110)
    ax.axvspan(band[0], band[1], color="tab:green", alpha=0.12, label=f"kept band {list(band)}")
    colors = ["tab:green" if band[0] <= x <= band[1] else "tab:gray" for x in xs]
    ax.bar(xs, counts, width=0.8 / n, color=colors)
    ax.set_xlabel(f"pass rate (correct of n={n} samples)")
    ax.set_ylabel("prompts")
    ax.set_xlim(-0.6 / n, 1 + 0.6 / n)
    ax.set_title(f"{title}\n{len(rates)} prompts, {kept} kept ({kept / max(len(rates), 1):.0%})", fontsize=9)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
