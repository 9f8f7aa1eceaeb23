"""The mathematics of DiscoScore, its discourse features and the discourse baselines, on parsed texts.

Everything here is a pure function of :class:`~qe.discourse.foci.ParsedText` objects and numpy arrays, so
it is testable on hand-made inputs; the scorers in :mod:`qe.discourse.scorer` add parsing, encoding,
batching, caching and the scorer API. Notation follows Zhao, Strube & Eger (2023).

Sentence graph (Sec. 3): for sentences i < j that share at least one focus,
    unweighted  A_ij = 1 / (j - i)        weighted  A_ij = a / (j - i),  a = number of shared foci;
A_ij = 0 for j <= i and for sentences with no focus in common.
"""
from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from qe.discourse.foci import FocusKey, ParsedText, WordVectors

# --------------------------------------------------------------------------------------------------------
# sentence graphs


def sentence_adjacency(sent_foci: list[set], weighted: bool = False) -> np.ndarray:
    """Upper-triangular adjacency over sentences (definitions in the module docstring)."""
    n = len(sent_foci)
    A = np.zeros((n, n), dtype=np.float64)
    for i in range(n):
        if not sent_foci[i]:
            continue
        for j in range(i + 1, n):
            shared = len(sent_foci[i] & sent_foci[j])
            if shared:
                A[i, j] = (shared if weighted else 1.0) / (j - i)
    return A


def lexical_adjacency(parsed: ParsedText, vectors: WordVectors, threshold: float) -> np.ndarray:
    """Lexical Graph (Mesgar & Strube 2016, as DiscoScore App. A.1 defines it): sentences i < j are linked with
    weight 1/(j-i) when they contain a pair of nouns that are the same lemma or whose vector cosine > threshold."""
    n = len(parsed.sentences)
    lemmas = sorted(parsed.nouns)
    per_sent = [set() for _ in range(n)]
    for k, lem in enumerate(lemmas):
        for w in parsed.nouns[lem]:
            per_sent[parsed.words[w].sent].add(k)
    sims = vectors.similarity_matrix(lemmas) if lemmas else np.zeros((0, 0))
    similar = sims > threshold
    np.fill_diagonal(similar, True)
    A = np.zeros((n, n))
    for i in range(n):
        if not per_sent[i]:
            continue
        rows = sorted(per_sent[i])
        for j in range(i + 1, n):
            if per_sent[j] and similar[np.ix_(rows, sorted(per_sent[j]))].any():
                A[i, j] = 1.0 / (j - i)
    return A


# --------------------------------------------------------------------------------------------------------
# DiscoScore


def focus_embeddings(foci: dict[FocusKey, list[int]], Z: np.ndarray) -> dict[FocusKey, np.ndarray]:
    """Eq. (1): F_v = sum of the token embeddings of the focus' occurrences (F = A Z)."""
    return {k: Z[idx].sum(axis=0) for k, idx in foci.items()}


def ds_focus(hyp_foci: dict[FocusKey, list[int]], Z_hyp: np.ndarray, ref_foci: dict[FocusKey, list[int]],
             Z_ref: np.ndarray, distance: str = "euclidean", average: str = "precision") -> float | None:
    """Eq. (2): sum over common foci of ||F_hyp - F_ref||, divided by the number of hypothesis foci.

    ``distance``: ``euclidean`` (eq. 2) or ``squared`` (the authors' released code). ``average``:
    ``precision`` (eq. 2, divide by N = #hypothesis foci), ``recall`` (by #reference foci), ``f`` (the
    "F-score" DS-Focus* of Table 7 as the authors' code computes it: (P + R) / 2) or ``harmonic`` (2PR/(P+R)).
    Returns ``None`` when the two texts share no focus (eq. 2 is then an empty sum; the caller decides).
    A distance: 0 is best.
    """
    common = [k for k in hyp_foci if k in ref_foci]
    if not common:
        return None
    Fh = focus_embeddings({k: hyp_foci[k] for k in common}, Z_hyp)
    Fr = focus_embeddings({k: ref_foci[k] for k in common}, Z_ref)
    diff = np.stack([Fh[k] - Fr[k] for k in common]).astype(np.float64)
    sq = (diff**2).sum(axis=1)
    if distance == "euclidean":
        total = float(np.sqrt(sq).sum())
    elif distance == "squared":
        total = float(sq.sum())
    else:
        raise ValueError(f"distance={distance!r}: use 'euclidean' or 'squared'")
    P, R = total / len(hyp_foci), total / len(ref_foci)
    if average == "precision":
        return P
    if average == "recall":
        return R
    if average == "f":
        return (P + R) / 2
    if average == "harmonic":
        return 0.0 if P + R == 0 else 2 * P * R / (P + R)
    raise ValueError(f"average={average!r}: use precision, recall, f or harmonic")


def graph_embedding(S: np.ndarray, A: np.ndarray, normalize: bool = True) -> np.ndarray:
    """S_hat = (A + I) S (eq. 3's aggregation), rows L2-normalised (authors' code) when ``normalize``; then the
    concatenation [mean, max, min, sum] over sentences."""
    S_hat = (A + np.eye(len(A))) @ S.astype(np.float64)
    if normalize:
        S_hat = S_hat / (np.linalg.norm(S_hat, axis=1, keepdims=True) + 1e-30)
    return np.concatenate([S_hat.mean(0), S_hat.max(0), S_hat.min(0), S_hat.sum(0)])


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return math.nan
    return float(np.clip(a @ b / (na * nb), -1.0, 1.0))


def ds_sent(S_hyp: np.ndarray, A_hyp: np.ndarray, S_ref: np.ndarray, A_ref: np.ndarray,
            normalize: bool = True) -> float:
    """Eq. (3): cosine between the mean-max-min-sum graph embeddings of hypothesis and reference (1 is best)."""
    return cosine(graph_embedding(S_hyp, A_hyp, normalize), graph_embedding(S_ref, A_ref, normalize))


# --------------------------------------------------------------------------------------------------------
# baselines (DiscoScore App. A.1)


def rc_lc(parsed: ParsedText) -> tuple[float, float] | None:
    """RC and LC of Wong & Kit (2012) as DiscoScore operationalises them (noun lemmas, repetition).

    With T the distinct noun lemmas of the text and c(n) the number of occurrences of lemma n,
    RC = sum_{n: c(n) > 1} c(n) / |T| (how often cohesion devices appear, per noun type) and
    LC = |{n: c(n) > 1}| / |T| (share of noun types that are cohesion devices). ``None`` when |T| = 0.
    """
    counts = [len(v) for v in parsed.nouns.values()]
    if not counts:
        return None
    rep = [c for c in counts if c > 1]
    return sum(rep) / len(counts), len(rep) / len(counts)


def graph_outdegree(A: np.ndarray) -> float:
    """Guinaudeau & Strube's coherence: the average out-degree sum(A) / #sentences."""
    return float(A.sum() / len(A)) if len(A) else math.nan


def lexical_chains(parsed: ParsedText) -> dict[str, set[int]]:
    """Gong et al. (2015): one chain per noun lemma occurring in more than one sentence -> its sentence set."""
    chains = {}
    for lem, idx in parsed.nouns.items():
        sents = {parsed.words[i].sent for i in idx}
        if len(sents) > 1:
            chains[lem] = sents
    return chains


def lexical_chain_score(hyp: ParsedText, ref: ParsedText, average: str = "sum") -> float:
    """Soft chain overlap: for each hypothesis chain also in the reference, |common positions| / |reference
    chain positions|; summed (authors' code, ``average="sum"``) or divided by the number of hypothesis chains
    (``"mean"``, in [0, 1]). 0 when the hypothesis has no chain."""
    hc, rc = lexical_chains(hyp), lexical_chains(ref)
    if not hc:
        return 0.0
    total = sum(len(hc[k] & rc[k]) / len(rc[k]) for k in hc if k in rc)
    if average == "sum":
        return float(total)
    if average == "mean":
        return float(total / len(hc))
    raise ValueError(f"average={average!r}: use 'sum' or 'mean'")


# --------------------------------------------------------------------------------------------------------
# discourse features (Sec. 5) and discriminativeness (eq. 4)


def focus_frequency(foci: dict[FocusKey, list[int]]) -> float:
    """FREQ(x): total frequency of the foci occurring more than once / number of such foci; 0.0 when no focus
    repeats (so texts without repetition rank below every text with repetition)."""
    reps = [len(v) for v in foci.values() if len(v) > 1]
    return float(sum(reps) / len(reps)) if reps else 0.0


def connectivity(A: np.ndarray) -> float:
    """Conn(x): the average of all elements of the n x n sentence adjacency matrix (NaN for no sentence)."""
    return float(A.mean()) if A.size else math.nan


def discriminativeness(hyp_values: Iterable[float], ref_values: Iterable[float],
                       exclude: Iterable[bool] | None = None) -> dict[str, float]:
    """Eq. (4) and Table 11's split for one feature R over (hyp, ref) pairs.

    Returns ``D`` = |{R(ref) < R(hyp)}| / N (eq. 4), and the shares ``ref_gt_hyp`` / ``equal`` / ``ref_lt_hyp``
    (Table 11's D>0 / D=0 / D<0), ``n`` the number of pairs used. Pairs with a NaN value, or flagged in
    ``exclude`` (Table 11 drops pairs whose hypothesis equals the reference), are left out of N.
    """
    h = np.asarray(list(hyp_values), dtype=np.float64)
    r = np.asarray(list(ref_values), dtype=np.float64)
    if h.shape != r.shape:
        raise ValueError(f"discriminativeness: {len(h)} hypothesis values vs {len(r)} reference values")
    keep = ~(np.isnan(h) | np.isnan(r))
    if exclude is not None:
        keep &= ~np.asarray(list(exclude), dtype=bool)
    h, r = h[keep], r[keep]
    n = len(h)
    if n == 0:
        return {"D": math.nan, "ref_gt_hyp": math.nan, "equal": math.nan, "ref_lt_hyp": math.nan, "n": 0}
    lt = float((r < h).mean())
    return {"D": lt, "ref_gt_hyp": float((r > h).mean()), "equal": float((r == h).mean()), "ref_lt_hyp": lt,
            "n": n}
