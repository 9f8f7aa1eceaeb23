"""Fast TER with the exact numbers of sacrebleu's TER (``sacrebleu.metrics.TER``, Snover et al. 2006).

sacrebleu's TER is a heuristic: a greedy search over word-block shifts (tercom's rules: blocks of at most 10 words
that match the reference, moved at most 50 positions, at most 1,000 candidate shifts per sentence pair) around a
*beam* edit distance that only fills a band of about 50 cells around the (pseudo-)diagonal of the matrix. Its
score for one output is the fewest edits over the references divided by the average reference length. This
module computes the same edit counts -- not an approximation: the same candidates, the same ranking of shifts,
the same stopping rules, the same tie-breaking in the alignment -- faster:

* **Bit-parallel edit distance.** A candidate shift is scored with Hyyrö's bit-vector Levenshtein algorithm
  (one handful of integer operations per hypothesis word instead of one Python step per matrix cell), resumed from
  the stored column of the longest prefix the shifted hypothesis shares with the current one, and stopped as soon
  as its column equals the current hypothesis's again (then the rest of the matrix is the same).
  The band does not matter when no path leaving it can be optimal: every path through a cell (i, j) outside the
  band costs at least |j - i| + |(n_ref - j) - (n_hyp - i)|; a Levenshtein distance below the smallest such cost
  (the band's *margin*) is the band's distance too, and the band's backtrace (sacrebleu's preference:
  match/substitution, then deletion, then insertion) is the plain matrix's, read off the stored bit vectors.
  Otherwise -- very unequal lengths, sentences over ~50 words -- that hypothesis is scored with the band's own
  matrix, as sacrebleu fills it.
* **Candidates in bulk.** The shift candidates of one step are listed and counted first (the 1,000-candidate cap
  depends only on their number); duplicates (the same block to the same place, reached from another reference
  position) are scored once; and a candidate whose gain cannot beat the best one found is not scored: a shift
  gains at most 2 * min(block length, words jumped) (the Levenshtein distance between the hypothesis and its
  shifted form; plus the band's excess where the band applies) and at most ``distance - bag-of-words bound``.
* **References pruned by a lower bound.** Shifts keep the hypothesis's bag of words, so every reference costs at
  least max(n_hyp, n_ref) - |bag(hyp) ∩ bag(ref)| edits. References are tried from the smallest bound up, and
  those whose bound is not below the best count found are skipped (only the minimum enters the score).

:func:`ter_stats` gives sacrebleu's segment statistics ``(fewest edits, average reference length)``,
:func:`sentence_ter` and :func:`corpus_ter` its scores on sacrebleu's 0-100 scale (bit-identical floats);
:func:`edit_count` equals ``sacrebleu.metrics.lib_ter.translation_edit_rate``; :class:`FastTER` stands in for
``sacrebleu.metrics.TER`` in the ``ter`` scorer (``sentence_score``, ``corpus_score``, sacrebleu's ``TERScore``).
"""
from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache
from typing import Sequence

# sacrebleu's limits (sacrebleu/metrics/lib_ter.py); the tests check they still are what the installed one uses
MAX_SHIFT_SIZE = 10
MAX_SHIFT_DIST = 50
BEAM_WIDTH = 25
MAX_SHIFT_CANDIDATES = 1000


# --------------------------------------------------------------------------------------------------------------
# tokenisation: sacrebleu's own tokenizer (same normalisation, same cache)
# --------------------------------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def tercom_tokenizer(normalized: bool = False, case_sensitive: bool = False):
    from sacrebleu.tokenizers.tokenizer_ter import TercomTokenizer

    return TercomTokenizer(normalized=normalized, no_punct=False, asian_support=False,
                           case_sensitive=case_sensitive)


# --------------------------------------------------------------------------------------------------------------
# the band of sacrebleu's beam edit distance
# --------------------------------------------------------------------------------------------------------------
def _band(n_h: int, n_r: int) -> list[tuple[int, int]]:
    """sacrebleu's filled columns [lo_i, hi_i) for rows i = 0..n_h (row 0 is the initial row, all filled)."""
    ratio = n_r / n_h if n_h else 1
    bw = math.ceil(ratio / 2 + BEAM_WIDTH) if BEAM_WIDTH < ratio / 2 else BEAM_WIDTH
    out = [(0, n_r + 1)]
    for i in range(1, n_h + 1):
        p = math.floor(i * ratio)
        out.append((max(0, p - bw), n_r + 1 if i == n_h else min(n_r + 1, p + bw)))
    return out


@lru_cache(maxsize=65536)
def _band_margin(n_h: int, n_r: int) -> float:
    """The smallest cost of a path through a cell that sacrebleu's band leaves unfilled (inf: none).

    Every monotone path through (i, j) costs at least f(j) = |j - i| + |(n_r - n_h) - (j - i)|, a convex function
    flat on [i, i + n_r - n_h], so its minimum over an interval is at the clamp of i or of i + n_r - n_h. A
    distance below this margin is the band's distance too, and the band's backtrace is the full matrix's.
    """
    d = n_r - n_h
    best = math.inf
    for i, (lo, hi) in enumerate(_band(n_h, n_r)):
        for a, b in ((0, lo - 1), (hi, n_r)):  # unfilled columns [a, b]
            if a <= b:
                for j in (min(max(i, a), b), min(max(i + d, a), b)):
                    best = min(best, abs(j - i) + abs(d - (j - i)))
    return best


_INF = int(1e16)


def _banded_rows(pms: list[int], m: int) -> list[list[int]]:
    """sacrebleu's beam edit distance matrix (cells outside the band stay at its infinity)."""
    rows = [list(range(m + 1))]
    for i, (lo, hi) in enumerate(_band(len(pms), m)):
        if i == 0:
            continue
        prev = rows[-1]
        row = [_INF] * (m + 1)
        pm = pms[i - 1]
        for j in range(lo, hi):
            if j == 0:
                row[0] = prev[0] + 1
            else:
                row[j] = min(_INF, prev[j - 1] + (0 if (pm >> (j - 1)) & 1 else 1), prev[j] + 1, row[j - 1] + 1)
        rows.append(row)
    return rows


# --------------------------------------------------------------------------------------------------------------
# bit-parallel Levenshtein (Hyyrö 2003), columns = hypothesis prefixes, bits = reference positions
# --------------------------------------------------------------------------------------------------------------
def _sweep(pms: list[int], start: int, state: tuple[int, int, int], full: int, top: int, out: list | None = None,
           cols: list | None = None, same_from: int = 0) -> int:
    """Run Hyyrö's recurrence over ``pms[start:]`` from the column ``state`` = (VP, VN, D[k][m]) and return the
    distance. ``out``: append every column. ``cols``: the current hypothesis's columns, of which ``pms`` is a
    reordering equal to it from ``same_from`` on: stop as soon as a column there equals the current one (the rest
    of the matrix is then the current one's)."""
    vp, vn, dist = state
    n = len(pms)
    k = start
    while k < n:
        x = pms[k] | vn
        d0 = ((((x & vp) + vp) ^ vp) | x) & full
        hp = vn | (full & ~(d0 | vp))
        hn = d0 & vp
        if hp & top:
            dist += 1
        elif hn & top:
            dist -= 1
        hp = (hp << 1) | 1
        vp = ((hn << 1) | (full & ~(d0 | hp))) & full
        vn = hp & d0
        k += 1
        if out is not None:
            out.append((vp, vn, dist))
        elif k >= same_from:
            c = cols[k]
            if c[0] == vp and c[1] == vn:
                return cols[n][2]
    return dist


def _columns(pms: list[int], m: int, full: int, top: int) -> list[tuple[int, int, int]]:
    """(VP, VN, D[k][m]) for every hypothesis prefix k = 0..n: the vertical +1/-1 deltas of column k."""
    out = [(full, 0, m)]
    _sweep(pms, 0, out[0], full, top, out=out)
    return out


def _column_values(cols):
    """D(i, j) read off the stored bit-vector columns."""
    def val(i: int, j: int) -> int:
        vp, vn, _ = cols[i]
        mask = (1 << j) - 1
        return i + (vp & mask).bit_count() - (vn & mask).bit_count()

    return val


def _alignment(pms: list[int], m: int, val, cur: int) -> tuple[list[int], list[int], list[int]]:
    """sacrebleu's ``trace_to_alignment(_flip_trace(trace))`` from the matrix values ``val(i, j)`` (``cur`` =
    the distance): align (ref position -> hyp position), ref_err, hyp_err. Backtrace preference as sacrebleu's:
    match/substitution, then deletion (of a hypothesis word), then insertion."""
    n = len(pms)
    align = [0] * m
    ref_err = [0] * m
    hyp_err = [0] * n
    i, j = n, m
    while i > 0 or j > 0:
        if j == 0:  # deletion of a hypothesis word (a flipped trace's insertion)
            i -= 1
            hyp_err[i] = 1
            cur -= 1
            continue
        if i == 0:  # insertion of a reference word
            j -= 1
            align[j] = -1
            ref_err[j] = 1
            cur -= 1
            continue
        sub = 0 if (pms[i - 1] >> (j - 1)) & 1 else 1
        diag = val(i - 1, j - 1)
        if diag + sub == cur:
            i -= 1
            j -= 1
            align[j] = i
            hyp_err[i] = ref_err[j] = sub
            cur = diag
            continue
        up = val(i - 1, j)
        if up + 1 == cur:
            i -= 1
            hyp_err[i] = 1
            cur = up
            continue
        j -= 1  # left (insertion); its value is cur - 1
        align[j] = i - 1
        ref_err[j] = 1
        cur -= 1
    return align, ref_err, hyp_err


def _perform_shift(words: list, start: int, length: int, target: int) -> list:
    """sacrebleu's ``_perform_shift`` (the three cases, including its reading of a target inside the block)."""
    if target < start:
        return words[:target] + words[start:start + length] + words[target:start] + words[start + length:]
    if target > start + length:
        return words[:start] + words[start + length:target] + words[start:start + length] + words[target:]
    return words[:start] + words[start + length:length + target] + words[start:start + length] + words[length + target:]


def _changed_span(n: int, start: int, length: int, target: int) -> tuple[int, int, int]:
    """(first changed position, first position unchanged from there on, words the block jumps over)."""
    if target < start:
        return target, start + length, start - target
    if target > start + length:
        return start, target, target - start - length
    end = min(n, length + target)
    return start, end, max(0, end - start - length)


def edit_count(words_hyp: Sequence[str], words_ref: Sequence[str], bag_bound: int | None = None) -> int:
    """TER edits (shifts + beam edit distance) of one hypothesis against one reference, exactly sacrebleu's
    ``translation_edit_rate(words_hyp, words_ref)[0]``. ``bag_bound``: the bag-of-words lower bound, if known."""
    n_h, m = len(words_hyp), len(words_ref)
    if m == 0:
        return n_h
    if n_h == 0:
        return m
    if bag_bound is None:
        bag_bound = max(n_h, m) - sum((Counter(words_hyp) & Counter(words_ref)).values())
    margin = _band_margin(n_h, m)

    ref = list(words_ref)
    peq: dict[str, int] = {}
    pos: dict[str, list[int]] = {}
    for j, w in enumerate(ref):
        peq[w] = peq.get(w, 0) | (1 << j)
        pos.setdefault(w, []).append(j)
    full = (1 << m) - 1
    top = 1 << (m - 1)

    words = list(words_hyp)
    pms = [peq.get(w, 0) for w in words]
    shifts = 0
    checked = 0
    while True:
        cols = _columns(pms, m, full, top)
        pre_full = cols[n_h][2]
        if pre_full < margin:  # the band changes nothing (the usual case)
            pre = pre_full
            if pre <= bag_bound:  # no shift can lower the distance: sacrebleu stops here, capped or not
                return shifts + pre
            align, ref_err, hyp_err = _alignment(pms, m, _column_values(cols), pre)
        else:  # a long or lopsided pair where the band may matter: sacrebleu's banded matrix itself
            rows = _banded_rows(pms, m)
            pre = rows[n_h][m]
            if pre <= bag_bound:
                return shifts + pre
            align, ref_err, hyp_err = _alignment(pms, m, lambda i, j: rows[i][j], pre)
        hcum = [0]
        for e in hyp_err:
            hcum.append(hcum[-1] + e)
        rcum = [0]
        for e in ref_err:
            rcum.append(rcum[-1] + e)

        # list the candidates exactly as sacrebleu's _shift enumerates them; count them for the cap
        count = 0
        seen: set[tuple[int, int, int]] = set()
        for sh in range(n_h):
            rposs = pos.get(words[sh])
            if not rposs:
                continue
            for sr in rposs:
                if abs(sr - sh) > MAX_SHIFT_DIST:
                    continue
                length = 0
                while words[sh + length] == ref[sr + length] and length < MAX_SHIFT_SIZE:
                    length += 1
                    if hcum[sh + length] - hcum[sh] and rcum[sr + length] - rcum[sr] \
                            and not (sh <= align[sr] < sh + length):
                        prev = -1
                        for off in range(-1, length):
                            idx = 0 if sr + off == -1 else align[sr + off] + 1
                            if idx == prev:
                                continue
                            prev = idx
                            count += 1
                            seen.add((sh, length, idx))
                    if n_h == sh + length or m == sr + length:
                        break
        checked += count
        if checked >= MAX_SHIFT_CANDIDATES or not seen:  # capped: sacrebleu keeps the current hypothesis
            return shifts + pre

        # score the distinct candidates, best bound first, until no bound can beat the best. A shift's gain is
        # at most pre - bag_bound, and at most 2 * min(block, jump) + (pre - pre_full) (the Levenshtein
        # distance between the hypothesis and its shifted form is at most 2 * min(block, jump))
        gain_cap = pre - bag_bound
        slack = pre - pre_full
        ranked = []
        for sh, length, idx in seen:
            a, b, jump = _changed_span(n_h, sh, length, idx)
            ranked.append((min(2 * min(length, jump) + slack, gain_cap), length, -sh, -idx, a, b))
        ranked.sort(reverse=True)
        best = None  # only shifts that lower the distance matter: sacrebleu stops when the best gains <= 0
        for ub, length, nsh, nidx, a, b in ranked:
            if ub <= 0 or (best is not None and (ub, length, nsh, nidx) < best):
                break
            shifted = _perform_shift(pms, -nsh, length, -nidx)
            while a < b and shifted[a] == pms[a]:
                a += 1
            if a >= b:  # the same hypothesis as far as the reference can tell: no gain
                continue
            dist = _sweep(shifted, a, cols[a], full, top, cols=cols, same_from=b)
            if dist >= margin:
                dist = _banded_rows(shifted, m)[n_h][m]
            gain = pre - dist
            if gain > 0 and (best is None or (gain, length, nsh, nidx) > best):
                best = (gain, length, nsh, nidx)
        if best is None:
            return shifts + pre
        _, length, nsh, nidx = best
        shifts += 1
        words = _perform_shift(words, -nsh, length, -nidx)
        pms = _perform_shift(pms, -nsh, length, -nidx)


def ter_stats(words_hyp: Sequence[str], refs_words: Sequence[Sequence[str]]) -> tuple[int, float]:
    """sacrebleu's TER segment statistics: (fewest edits over the references, average reference length).

    References are tried from the smallest bag-of-words bound up; one whose bound is not below the best count
    so far cannot lower the minimum and is skipped."""
    if not refs_words:
        raise ValueError("ter_stats: no references")
    n_h = len(words_hyp)
    hc = Counter(words_hyp)
    order = []
    for k, r in enumerate(refs_words):
        lb = max(n_h, len(r)) - sum((hc & Counter(r)).values()) if r else n_h
        order.append((lb, k))
    order.sort()
    best = None
    for lb, k in order:
        if best is not None and lb >= best:
            break
        e = edit_count(words_hyp, refs_words[k], lb)
        if best is None or e < best:
            best = e
    ref_lengths = 0
    for r in refs_words:
        ref_lengths += len(r)
    return best, ref_lengths / len(refs_words)


def _score_from_stats(total_edits, sum_ref_lengths) -> float:
    """sacrebleu's ``TER._compute_score_from_stats`` (0-100)."""
    if sum_ref_lengths > 0:
        score = total_edits / sum_ref_lengths
    elif total_edits > 0:
        score = 1.0
    else:
        score = 0.0
    return 100 * score


def sentence_ter(hyp: str, refs: Sequence[str], normalized: bool = False, case_sensitive: bool = False) -> float:
    """``sacrebleu.metrics.TER(normalized=, case_sensitive=).sentence_score(hyp, refs).score`` (0-100)."""
    return FastTER(normalized, case_sensitive).sentence_score(hyp, refs).score


def corpus_ter(hyps: Sequence[str], refs: Sequence[Sequence[str]], normalized: bool = False,
               case_sensitive: bool = False) -> float:
    """sacrebleu's corpus TER (0-100) for per-output reference lists (sums of the segment statistics)."""
    k = max((len(r) for r in refs), default=0)
    streams = [[rr[j] if j < len(rr) else None for rr in refs] for j in range(k)]
    return FastTER(normalized, case_sensitive).corpus_score(hyps, streams).score


class FastTER:
    """Drop-in for ``sacrebleu.metrics.TER(normalized=, case_sensitive=)``'s ``sentence_score`` and
    ``corpus_score`` (reference streams padded with None, as sacrebleu takes them), returning sacrebleu's
    ``TERScore`` with the same numbers."""

    def __init__(self, normalized: bool = False, case_sensitive: bool = False):
        self.normalized, self.case_sensitive = normalized, case_sensitive

    def _score(self, total_edits, sum_ref_lengths):
        from sacrebleu.metrics.ter import TERScore

        return TERScore(_score_from_stats(total_edits, sum_ref_lengths), total_edits, sum_ref_lengths)

    def sentence_score(self, hypothesis: str, references: Sequence[str]):
        tok = tercom_tokenizer(self.normalized, self.case_sensitive)
        return self._score(*ter_stats(tok(hypothesis.rstrip()).split(),
                                      [tok(r.rstrip()).split() for r in references if r is not None]))

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str | None]]):
        per_output = [[r for r in rr if r is not None] for rr in zip(*references)]
        tok = tercom_tokenizer(self.normalized, self.case_sensitive)
        total_e = 0
        total_l = 0
        for h, rr in zip(hypotheses, per_output):
            e, L = ter_stats(tok(h.rstrip()).split(), [tok(r.rstrip()).split() for r in rr])
            total_e += e
            total_l += L
        return self._score(total_e, total_l)
