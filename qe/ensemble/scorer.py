"""Scorer for ``ensemble`` exports: the weighted mean of the members' scores, then the ensemble's prediction rule.
With member scales (``[lo, hi]`` each) every member's score is first mapped to ``(s - lo) / (hi - lo)``.

``qe.load(ensemble_export, **options)``: ``rounded=False`` returns the plain weighted mean (no rounding or clipping);
every other option (``device``, ``mr_format``, ``max_tokens``, ``verify`` ...) is passed to every member's loader.
Each member scores all outputs itself (its own length-sorted batching), so scores come back in input order.
A NaN from any member makes that output's ensemble score NaN. ``score_components`` gives every member's scores
(as the ensemble averages them: raw for RatPred members, mapped by their scale when the ensemble has scales) and
``ensemble``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from qe.core.scorer import Scorer
from qe.ensemble.format import read_spec


class EnsembleScorer(Scorer):
    """Weighted mean of member scorers (built from an export, or directly from scorers and weights)."""

    main_component = "ensemble"

    def __init__(self, members: dict[str, Scorer], weights: dict[str, float], predict: dict[str, Any] | None = None,
                 checksum: str = "", scales: dict[str, Any] | None = None):
        from qe.ensemble.format import check_scales, check_weights

        self.members = dict(members)
        self.weights = check_weights(list(self.members), weights)
        self.scales = check_scales(list(self.members), scales) if scales else None
        self.predict = predict
        self._checksum = checksum[:12]
        self.name = "Ensemble(" + "+".join(self.members) + ")"
        ms = list(self.members.values())
        self.requires_mrs = any(m.requires_mrs for m in ms)
        self.requires_refs = any(m.requires_refs for m in ms)
        self.requires_sources = any(m.requires_sources for m in ms)
        self.corpus_dependent = any(m.corpus_dependent for m in ms)
        self.accepts_ids = any(m.accepts_ids for m in ms)
        hib = {m.higher_is_better for m in ms}
        if len(hib) > 1:
            raise ValueError(f"{self.name}: members disagree on whether higher is better; a mean of them means little")
        self.higher_is_better = hib.pop()

    def signature_fields(self) -> dict:
        p = self.predict
        rule = {"round": p.get("round_to"), "clip": f"{p.get('clip_lo')}-{p.get('clip_hi')}"} if p else {"rule": "mean"}
        sc = self.scales or {}
        members = {f"{n}*{self.weights[n]:.3g}" + (f"[{sc[n][0]:g},{sc[n][1]:g}]" if sc else ""): m.signature
                   for n, m in self.members.items()}
        return {"ensemble": self._checksum or None, **rule, **members}

    def _member_scores(self, outputs, *, mrs, refs, batch_size, progress, ids=None, **kwargs) -> dict[str, np.ndarray]:
        out = {}
        for name, m in self.members.items():
            kw = dict(kwargs)
            if ids is not None and m.accepts_ids:
                kw["ids"] = ids
            s = np.asarray(m.score(outputs, mrs=mrs, refs=refs, batch_size=batch_size, progress=progress, **kw),
                           dtype=np.float64)
            if self.scales:
                lo, hi = self.scales[name]
                s = (s - lo) / (hi - lo)
            out[name] = s
        return out

    def _combine(self, scores: dict[str, np.ndarray]) -> np.ndarray:
        mean = sum(self.weights[n] * s for n, s in scores.items())
        if self.predict:
            from qe.core.predictions import round_clip

            p = self.predict
            mean = np.where(np.isfinite(mean), round_clip(np.nan_to_num(mean), p.get("round_to"), p.get("clip_lo"),
                                                           p.get("clip_hi")), np.nan)
        return mean

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kwargs):
        return self._combine(self._member_scores(outputs, mrs=mrs, refs=refs, batch_size=batch_size, progress=progress,
                                                 **kwargs)).tolist()

    def _score_components(self, outputs, *, mrs=None, refs=None, batch_size=None, progress=True, **kwargs):
        scores = self._member_scores(outputs, mrs=mrs, refs=refs, batch_size=batch_size, progress=progress, **kwargs)
        return {**{n: s.tolist() for n, s in scores.items()}, "ensemble": self._combine(scores).tolist()}


def from_export(path: Path, manifest: dict, rounded: bool = True, **options: Any) -> EnsembleScorer:
    from qe.registry import load

    spec = read_spec(path)
    members = {r["name"]: load(Path(path) / r["path"], **{**r.get("options", {}), **options}) for r in spec["members"]}
    scales = {r["name"]: r["scale"] for r in spec["members"] if "scale" in r} or None
    return EnsembleScorer(members, {r["name"]: r["weight"] for r in spec["members"]},
                          predict=spec.get("predict") if rounded else None, checksum=manifest.get("checksum", ""),
                          scales=scales)
