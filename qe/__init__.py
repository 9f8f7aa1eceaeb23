"""qe: trainable quality estimation for NLG output.

    import qe
    scorer = qe.load("path/to/export")     # or a registered name, e.g. qe.load("rouge-l")
    scores = scorer.score(outputs)
"""
from qe.version import __version__
from qe.registry import available_scorers, load, register_export_kind, register_scorer
from qe.scorers.base import Scorer

__all__ = [
    "__version__",
    "Scorer",
    "available_scorers",
    "load",
    "register_export_kind",
    "register_scorer",
]
