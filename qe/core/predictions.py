"""Predicted ratings: rounding and clipping to the rating scale, and the figures a regressor is judged by.

Shared by RatPred (:mod:`qe.ratpred`) and the ensembles over its models (:mod:`qe.ensemble`).
"""
from __future__ import annotations

import math

import numpy as np


def round_clip(pred: np.ndarray, round_to: float | None, lo: float | None, hi: float | None) -> np.ndarray:
    """Round to the precision ``round_to`` (None: no rounding) and clip to [lo, hi] (None: open)."""
    p = np.asarray(pred, dtype=np.float64)
    if round_to:
        p = np.round(p / round_to) * round_to
    if lo is not None or hi is not None:
        p = np.clip(p, lo if lo is not None else -np.inf, hi if hi is not None else np.inf)
    return p


def correlations(pred, gold) -> dict[str, float]:
    """Pearson, Spearman (0.0 when predictions are constant), MAE, RMSE."""
    from scipy.stats import pearsonr, spearmanr

    p, g = np.asarray(pred, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    if len(p) < 2 or np.all(p == p[0]) or np.all(g == g[0]):
        pr = sr = 0.0
    else:
        pr, sr = float(pearsonr(p, g)[0]), float(spearmanr(p, g)[0])
    return {"pearson": pr, "spearman": sr, "mae": float(np.mean(np.abs(p - g))),
            "rmse": float(math.sqrt(np.mean((p - g) ** 2)))}
