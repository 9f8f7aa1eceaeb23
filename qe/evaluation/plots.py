"""Figures of a meta-evaluation report (matplotlib, Agg backend: no display needed).

One figure per rating aspect and kind, each a grid with one panel per metric:

* ``scatter_<aspect>.png`` -- metric score vs human rating (small vertical jitter on the discrete ratings) with
  the least-squares line and Pearson's r;
* ``bands_<aspect>.png`` -- distribution of the metric's scores in each human-rating band (box plots; bands of
  width 1 on the rating scale), as GRUEN's Figure 2;
* ``systems_<aspect>.png`` -- system-level ranking chart: per-unit means of the rating and of every metric,
  z-scored across units (lower-is-better metrics negated) and units ordered by the human mean;
* ``length_metrics.png`` -- every metric against output length in words (the confound section), with the
  least-squares line and Spearman's rho.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from qe.evaluation.analysis import EvalData, system_means, system_units
from qe.evaluation.stats import complete_pairs, corr_value


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _save(fig, path: Path, dpi: int) -> None:
    """PNG with an adaptive 256-colour palette: a third of the size of matplotlib's RGBA output."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, dpi=dpi, format="png")
    buf.seek(0)
    img = Image.open(buf).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    img.save(path, format="PNG", optimize=True)


def _grid(n: int, ncols: int = 4, w: float = 2.6, h: float = 2.1):
    plt = _plt()
    ncols = max(1, min(ncols, n))
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(w * ncols, h * nrows + 0.4), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return plt, fig, list(axes.flat[:n])


#: a scatter plot draws at most this many points (a seeded random subset; the line and the coefficient in its title
#: use every point): a million markers take minutes to render and show no more than 20,000 do
MAX_POINTS = 20_000


def _shown(rng, n: int) -> np.ndarray | slice:
    """The points a scatter plot of ``n`` draws: all of them, or :data:`MAX_POINTS` chosen at random."""
    return slice(None) if n <= MAX_POINTS else np.sort(rng.choice(n, MAX_POINTS, replace=False))


def _bands(lo: float, hi: float) -> list[tuple[float, float]]:
    edges = np.arange(math.floor(lo), math.ceil(hi) + 1e-9, 1.0)
    if edges.size < 2:
        edges = np.array([lo, hi + 1e-9])
    return [(float(a), float(b)) for a, b in zip(edges[:-1], edges[1:])]


def plot_length(d: EvalData, out_dir: Path, metrics: list[str], dpi: int, rng, prefix: str = "") -> Path:
    """Metric vs output length (words), one panel per metric: what the confound section quantifies."""
    plt, fig, axes = _grid(len(metrics))
    length = d.covariates["length"]
    for ax, m in zip(axes, metrics):
        x, y = complete_pairs(length, d.metrics[m])
        if x.size:
            sh = _shown(rng, x.size)
            xs_, ys_ = x[sh], y[sh]
            ax.scatter(xs_ + rng.uniform(-0.3, 0.3, size=xs_.size), ys_, s=3, alpha=0.25, color="tab:green",
                       linewidths=0)
            if x.size > 2 and np.ptp(x) > 0:
                k, b = np.polyfit(x, y, 1)
                xs = np.linspace(x.min(), x.max(), 20)
                ax.plot(xs, k * xs + b, color="tab:red", lw=1.5)
        rho = corr_value(x, y, "spearman") if x.size > 2 else math.nan
        ax.set_title(f"{m}  ρ={rho:.2f}", fontsize=8)
        ax.set_xlabel("length (words)", fontsize=6)
        ax.tick_params(labelsize=6)
    thin = f"; {MAX_POINTS:,} random points of {length.size:,} shown" if length.size > MAX_POINTS else ""
    fig.suptitle(f"metric vs output length (jittered), least-squares line, Spearman ρ{thin}", fontsize=9)
    fig.tight_layout()
    path = out_dir / f"{prefix}length_metrics.png"
    _save(fig, path, dpi)
    plt.close(fig)
    return path


def plot_all(d: EvalData, out_dir: str | Path, metrics: list[str] | None = None, dpi: int = 72,
             seed: int = 0, prefix: str = "") -> list[Path]:
    """Write every figure for every rating aspect; returns the files written."""
    plt = _plt()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    metrics = metrics or list(d.metrics)
    rng = np.random.default_rng(seed)
    written: list[Path] = []
    pooled = len(d.datasets) > 1
    units = system_units(d, np.ones(d.n, bool), pooled)
    means = system_means(d, np.ones(d.n, bool), units)
    if "length" in d.covariates:
        written.append(plot_length(d, out_dir, metrics, dpi, rng, prefix))
    for a in d.ratings:
        h_all = d.ratings[a]
        # scatter + regression line
        plt_, fig, axes = _grid(len(metrics))
        for ax, m in zip(axes, metrics):
            x, h = complete_pairs(d.metrics[m], h_all)
            if x.size:
                sh = _shown(rng, x.size)
                jit = rng.uniform(-0.12, 0.12, size=h[sh].size)
                ax.scatter(x[sh], h[sh] + jit, s=3, alpha=0.25, color="tab:blue", linewidths=0)
                if x.size > 2 and np.ptp(x) > 0:
                    k, b = np.polyfit(x, h, 1)
                    xs = np.linspace(x.min(), x.max(), 20)
                    ax.plot(xs, k * xs + b, color="tab:red", lw=1.5)
            r = corr_value(x, h) if x.size > 2 else math.nan
            ax.set_title(f"{m}  r={r:.2f}", fontsize=8)
            ax.tick_params(labelsize=6)
        thin = f"; at most {MAX_POINTS:,} random points of {h_all.size:,} shown" if h_all.size > MAX_POINTS else ""
        fig.suptitle(f"metric vs human {a} (jittered), least-squares line{thin}", fontsize=9)
        fig.tight_layout()
        p = out_dir / f"{prefix}scatter_{_safe(a)}.png"
        _save(fig, p, dpi)
        plt.close(fig)
        written.append(p)

        # metric distribution per rating band
        hv = h_all[~np.isnan(h_all)]
        lo, hi = d.rating_range or ((float(hv.min()), float(hv.max())) if hv.size else (0.0, 1.0))
        bands = _bands(lo, hi)
        plt_, fig, axes = _grid(len(metrics))
        for ax, m in zip(axes, metrics):
            x, h = complete_pairs(d.metrics[m], h_all)
            data, labels = [], []
            for i, (b0, b1) in enumerate(bands):
                last = i == len(bands) - 1
                sel = (h >= b0) & ((h <= b1) if last else (h < b1))
                data.append(x[sel] if sel.any() else np.array([np.nan]))
                labels.append(f"{b0:g}–{b1:g}\n({int(sel.sum())})")
            ax.boxplot(data, showfliers=False)
            ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=5)
            ax.set_title(m, fontsize=8)
            ax.tick_params(axis="y", labelsize=6)
        fig.suptitle(f"metric scores per human {a} band (n per band)", fontsize=9)
        fig.tight_layout()
        p = out_dir / f"{prefix}bands_{_safe(a)}.png"
        _save(fig, p, dpi)
        plt.close(fig)
        written.append(p)

        # system-level ranking chart
        mm = means.sort_values(f"rating:{a}")
        if len(mm) >= 2:
            fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(mm) + 2.5), 3.4))
            xs = np.arange(len(mm))

            def z(v):
                v = np.asarray(v, float)
                fin = v[~np.isnan(v)]
                if fin.size == 0:  # no unit has a value (e.g. no rating of this aspect): nothing to draw
                    return v
                s = float(fin.std())
                return (v - fin.mean()) / s if s > 0 else np.where(np.isnan(v), np.nan, 0.0)

            cmap = plt.get_cmap("tab20")
            for i, m in enumerate(metrics):
                ax.plot(xs, z(mm[f"metric:{m}"].to_numpy(float) * d.sign(m)), marker="o", ms=3, lw=0.8,
                        color=cmap(i % 20), label=m + ("" if d.info[m].higher_is_better else " (−)"))
            ax.plot(xs, z(mm[f"rating:{a}"]), marker="s", ms=5, lw=2.5, color="black", label=f"human {a}")
            ax.set_xticks(xs, [str(u) for u in mm.index], rotation=30, ha="right", fontsize=7)
            ax.set_ylabel("z-score of unit mean", fontsize=8)
            ax.set_title(f"system level: units ordered by human {a}", fontsize=9)
            ax.legend(fontsize=6, ncol=1, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
            fig.tight_layout()
            p = out_dir / f"{prefix}systems_{_safe(a)}.png"
            _save(fig, p, dpi)
            plt.close(fig)
            written.append(p)
    return written
