"""ROUGE-LM (Kann, Rothe & Filippova 2018, section 5): z(ROUGE-L-mult) + z(WPSLOR).

Both scores are normalised by their mean and standard deviation (population, ddof = 0) and summed. The statistics
come either from the evaluated set itself (default, as in the paper) or are fixed: ``stats=`` a dict
``{"rouge": [mean, std], "lm": [mean, std]}`` or the path of a JSON file written by :meth:`RougeLM.save_stats`
(computed once on a reference set with :meth:`RougeLM.fit_stats`), so that scores of different sets are comparable.

The LM is an export of kind ``slor`` (``qe/lm``), given as ``lm=<export dir>`` (a WordPiece export gives WPSLOR,
a word-level one WordSLOR); ``lm_score`` picks ``slor`` (default), ``nce`` or ``logprob``. The ROUGE part is any
registered reference metric (``rouge="rouge-l-mult"`` by default).

Empty outputs: the LM gives NaN (SLOR is undefined for zero tokens), so ROUGE-LM is NaN for them; NaN values are
left out of the normalisation statistics. A constant component (std 0) contributes 0.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np


from qe.core.scorer import Scorer
from qe.core.jsonio import dumps


def zstats(x) -> tuple[float, float]:
    a = np.asarray(x, dtype=float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        return math.nan, math.nan
    return float(a.mean()), float(a.std())


def znorm(x, stats: tuple[float, float]) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    mu, sd = stats
    if not np.isfinite(sd) or sd == 0:
        return np.where(np.isfinite(a), 0.0, np.nan)
    return (a - mu) / sd


def _lm_scorer(lm: Any, lm_score: str, **opts):
    import qe

    if lm is None:
        raise ValueError("ROUGE-LM needs an LM export: qe.load('rouge-lm', lm='path/to/slor_export')")
    if isinstance(lm, Scorer):
        return lm
    return qe.load(lm, score=lm_score, **opts)


class RougeLM(Scorer):
    requires_refs = True
    main_component = "rouge_lm"

    def __init__(self, lm: Any = None, lm_score: str = "slor", rouge: str = "rouge-l-mult",
                 stats: dict | str | Path | None = None, device: str | None = None, **rouge_options: Any):
        import qe

        self.lm = _lm_scorer(lm, lm_score, device=device)
        self.lm_score = lm_score
        self.rouge_name = rouge
        self.rouge = qe.load(rouge, **rouge_options)
        self.stats = self._read_stats(stats) if stats is not None else None
        self.name = f"ROUGE-LM({self.rouge.name}+{self.lm.name})"

    @staticmethod
    def _read_stats(stats) -> dict[str, tuple[float, float]]:
        if isinstance(stats, (str, Path)):
            stats = json.loads(Path(stats).read_text(encoding="utf-8"))
        try:
            return {k: (float(stats[k][0]), float(stats[k][1])) for k in ("rouge", "lm")}
        except (KeyError, TypeError, IndexError) as exc:
            raise ValueError(f"ROUGE-LM stats must be {{'rouge': [mean, std], 'lm': [mean, std]}}: {exc}") from None

    def signature_fields(self) -> dict:
        return {"norm": "fixed" if self.stats else "set", "rouge": self.rouge.signature, "lm": self.lm.signature}

    def _raw(self, outputs, refs, batch_size, progress):
        r = np.asarray(self.rouge.score(outputs, refs=refs, progress=progress), dtype=float)
        s = np.asarray(self.lm.score(outputs, batch_size=batch_size, progress=progress), dtype=float)
        return r, s

    def _score_components(self, outputs, *, mrs=None, refs=None, batch_size=None, progress=True, **kw):
        r, s = self._raw(outputs, refs, batch_size, progress)
        st = self.stats or {"rouge": zstats(r), "lm": zstats(s)}
        rz, sz = znorm(r, st["rouge"]), znorm(s, st["lm"])
        return {"rouge": r.tolist(), "lm": s.tolist(), "rouge_z": rz.tolist(), "lm_z": sz.tolist(),
                "rouge_lm": (rz + sz).tolist()}

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kw):
        return self._score_components(outputs, refs=refs, batch_size=batch_size, progress=progress)["rouge_lm"]

    def fit_stats(self, outputs, refs, progress: bool = False) -> dict[str, list[float]]:
        """Normalisation statistics from a reference set; also fixes them for this scorer."""
        from qe.core.scorer import check_texts, normalise_refs

        outputs = check_texts(outputs)
        r, s = self._raw(outputs, normalise_refs(refs, len(outputs)), None, progress)
        self.stats = {"rouge": zstats(r), "lm": zstats(s)}
        return {k: list(v) for k, v in self.stats.items()}

    def save_stats(self, path: str | Path) -> Path:
        if not self.stats:
            raise ValueError("no statistics yet: call fit_stats(outputs, refs) first")
        p = Path(path)
        p.write_text(dumps({**{k: list(v) for k, v in self.stats.items()}, "signature": self.signature},
                           indent=2) + "\n", encoding="utf-8")
        return p
