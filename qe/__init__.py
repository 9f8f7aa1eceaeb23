"""qe: trainable quality estimation for NLG output.

    import qe
    scorer = qe.load("path/to/export")     # or a registered name, e.g. qe.load("rouge-l")
    scores = scorer.score(outputs)

Submodules (``qe.refmetrics``, ``qe.evaluation``, ``qe.lm``, ...) are imported on first attribute access, so
``import qe`` stays cheap (no torch) and ``qe.refmetrics.describe()`` works without an explicit import.
"""
from __future__ import annotations

import importlib

from qe.version import __version__
from qe.registry import available_scorers, load, register_export_kind, register_scorer
from qe.core.scorer import Scorer

_SUBMODULES = {"core", "data", "discourse", "ensemble", "evaluation", "gruen", "lm", "ratpred", "refmetrics",
               "registry", "training", "errors", "cli", "zoo"}


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"qe.{name}")
    raise AttributeError(f"module 'qe' has no attribute {name!r}")


__all__ = [
    "__version__",
    "Scorer",
    "available_scorers",
    "load",
    "register_export_kind",
    "register_scorer",
]
