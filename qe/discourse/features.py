"""Discourse features of Sec. 5 (focus frequency, sentence connectivity) and their discriminativeness (eq. 4).

``discourse_features(texts, engine)`` returns, per text, FREQ and Conn-u / Conn-w for NN and Entity foci
(keys ``FREQ (NN)``, ``Conn-u (Entity)``, ...; Figure 5's six features). Empty texts give NaN for every feature;
FREQ is 0.0 when no focus repeats; Conn is 0.0 for a single sentence. ``feature_discriminativeness`` applies
eq. (4) to every feature over aligned (hypothesis, reference) lists, dropping pairs whose texts are identical
(as Table 11 does).
"""
from __future__ import annotations

import math

from qe.discourse import metrics as M
from qe.discourse.engine import DiscourseEngine
from qe.discourse.foci import entity_foci, sentence_foci

FEATURES = ("FREQ (NN)", "FREQ (Entity)", "Conn-u (NN)", "Conn-u (Entity)", "Conn-w (NN)", "Conn-w (Entity)")


def discourse_features(texts: list[str], engine: DiscourseEngine | None = None,
                       threshold: float = 0.8) -> dict[str, list[float]]:
    engine = engine or DiscourseEngine()
    out: dict[str, list[float]] = {k: [] for k in FEATURES}
    for p in engine.parse(list(texts)):
        if p.empty:
            for k in FEATURES:
                out[k].append(math.nan)
            continue
        for name, foci in (("NN", p.noun_foci()), ("Entity", entity_foci(p, engine.groups(p.nouns, threshold)))):
            out[f"FREQ ({name})"].append(M.focus_frequency(foci))
            sf = sentence_foci(p, foci)
            out[f"Conn-u ({name})"].append(M.connectivity(M.sentence_adjacency(sf, weighted=False)))
            out[f"Conn-w ({name})"].append(M.connectivity(M.sentence_adjacency(sf, weighted=True)))
    return out


def feature_discriminativeness(hyps: list[str], refs: list[str], engine: DiscourseEngine | None = None,
                               threshold: float = 0.8) -> dict[str, dict[str, float]]:
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses vs {len(refs)} references")
    engine = engine or DiscourseEngine()
    fh = discourse_features(hyps, engine, threshold)
    fr = discourse_features(refs, engine, threshold)
    same = [h.strip() == r.strip() for h, r in zip(hyps, refs)]
    return {k: M.discriminativeness(fh[k], fr[k], exclude=same) for k in FEATURES}
