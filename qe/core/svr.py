"""An SVR without pickle: the fitted model's parameters and libsvm's decision function, in numpy.

Shared by the two families that export scikit-learn SVRs: ``svr`` (Kann et al.'s combination of metrics,
:mod:`qe.refmetrics.svr`) and ``combiner`` (:mod:`qe.ensemble.combiner`). Neither scikit-learn nor torch is imported.
"""
from __future__ import annotations

from typing import Any

import numpy as np

#: kernels whose decision function :func:`decision_function` recomputes
KERNELS = ("rbf", "linear", "poly", "sigmoid")


def svr_params(model) -> dict[str, Any]:
    """The fitted ``SVR``'s kernel parameters, gamma resolved to a number (``"scale"`` / ``"auto"`` -> value)."""
    gamma = float(getattr(model, "_gamma", model.gamma if isinstance(model.gamma, (int, float)) else 0.0))
    return {"kernel": model.kernel, "gamma": gamma, "coef0": float(model.coef0), "degree": int(model.degree),
            "C": float(model.C), "epsilon": float(model.epsilon)}


def decision_function(X: np.ndarray, sv: np.ndarray, dual: np.ndarray, intercept: float, kernel: str,
                      gamma: float, coef0: float, degree: int) -> np.ndarray:
    """libsvm's prediction: sum_i dual_i * K(sv_i, x) accumulated in support-vector order, + intercept (= -rho)."""
    X = np.asarray(X, dtype=np.float64)
    total = np.zeros(len(X), dtype=np.float64)
    for i in range(sv.shape[0]):
        s = sv[i]
        if kernel == "rbf":
            acc = np.zeros(len(X))
            for j in range(X.shape[1]):
                d = X[:, j] - s[j]
                acc = acc + d * d
            k = np.exp(-gamma * acc)
        else:
            dot = np.zeros(len(X))
            for j in range(X.shape[1]):
                dot = dot + X[:, j] * s[j]
            if kernel == "linear":
                k = dot
            elif kernel == "poly":
                k = (gamma * dot + coef0) ** degree
            elif kernel == "sigmoid":
                k = np.tanh(gamma * dot + coef0)
            else:
                raise ValueError(f"kernel {kernel!r} is not supported without pickle (precomputed kernels)")
        total = total + dual[i] * k
    return total + intercept
