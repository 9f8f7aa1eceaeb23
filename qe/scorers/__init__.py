from qe.scorers.base import Scorer, check_texts, normalise_refs

__all__ = ["Scorer", "check_texts", "normalise_refs"]
