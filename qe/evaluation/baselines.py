"""Trivial baselines every metric should beat in a meta-evaluation.

``length``: the number of whitespace-separated tokens of the output (``str.split()``). Output length is a known
confound of fluency and quality ratings (Novikova et al. 2017 ship it as ``sys.ref.len``), so a report that
lists it shows how much of a metric's correlation length alone explains. Empty or whitespace-only outputs score
0 (a defined score, not NaN). It needs no model, so it also makes ``python evaluate.py`` work on a fresh
machine with nothing trained yet.
"""
from __future__ import annotations


from qe.core.scorer import Scorer


class LengthScorer(Scorer):
    name = "length"

    def _score(self, outputs, *, mrs=None, refs=None, batch_size=None, progress=True, **kw) -> list[float]:
        return [float(len(o.split())) for o in outputs]

    def signature_fields(self) -> dict:
        return {"unit": "whitespace-tokens"}
