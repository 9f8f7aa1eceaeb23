"""qe's fast TER (qe/refmetrics/ter.py, used by the ``ter`` scorer) gives sacrebleu's TER numbers exactly.

Every comparison is exact (``==`` on floats and on edit counts) against the installed sacrebleu:
``translation_edit_rate`` per hypothesis/reference pair, ``TER._compute_segment_statistics`` per output and
``TER.sentence_score`` / ``corpus_score`` with the options the ``ter`` scorer maps to (``normalized`` for
``tokenize="13a"``, ``case_sensitive`` for ``lowercase=False``). The offline part draws 1,200 output/reference sets
(random word sequences over a shared vocabulary with punctuation, mixed case and non-ASCII words, references
derived from one base sentence by block moves, substitutions, insertions and deletions) plus hand-picked edge
cases; the data part uses E2E's multi-reference test set and EMNLP17's outputs with their references.
"""
from __future__ import annotations

import random

import pytest
from conftest import needs_data
from sacrebleu.metrics import TER as SacreTER
from sacrebleu.metrics import lib_ter

import qe
from qe.refmetrics import ter as fast

_REAL_TER = lib_ter.translation_edit_rate

OPTIONS = [dict(normalized=False, case_sensitive=False), dict(normalized=True, case_sensitive=False),
           dict(normalized=False, case_sensitive=True), dict(normalized=True, case_sensitive=True)]

VOCAB = ("the a an food restaurant near river cheap expensive is has serves it of in and , . ! ? ' \" ( ) - "
         "The FOOD Near it's family-friendly 5-star £20-25 3.5 café naïve Ünïcode 東京 ラーメン смачна ½ € "
         "don't &amp; &quot; x").split()


def sacre_stats(hyp: str, refs: list[str], **opt):
    """sacrebleu's own segment statistics [fewest edits, average reference length] for one output."""
    m = SacreTER(**opt)
    return m._compute_segment_statistics(m._preprocess_segment(hyp),
                                         m._extract_reference_info([r for r in refs]))


def sacre_edits_and_cap(words_h: list[str], words_r: list[str]) -> tuple[int, int, bool]:
    """sacrebleu's translation_edit_rate loop (its own functions), also returning shifts and whether the
    1,000-candidate cap stopped it: to check the test data reaches these branches."""
    if not words_r:
        return len(words_h), 0, False
    ced = lib_ter.BeamEditDistance(words_r)
    words, shifts, checked = words_h, 0, 0
    while True:
        delta, new, checked = lib_ter._shift(words, words_r, ced, checked)
        if checked >= lib_ter._MAX_SHIFT_CANDIDATES:
            return shifts + ced(words)[0], shifts, True
        if delta <= 0:
            return shifts + ced(words)[0], shifts, False
        shifts += 1
        words = new


def perturb(rng: random.Random, words: list[str], k: int) -> list[str]:
    w = list(words)
    for _ in range(k):
        op = rng.random()
        if op < 0.35 and len(w) > 1:  # move a block
            i = rng.randrange(len(w))
            blk = w[i:i + rng.randint(1, 6)]
            del w[i:i + len(blk)]
            j = rng.randint(0, len(w))
            w[j:j] = blk
        elif op < 0.55 and w:
            w[rng.randrange(len(w))] = rng.choice(VOCAB)
        elif op < 0.75 and w:
            del w[rng.randrange(len(w))]
        else:
            w.insert(rng.randint(0, len(w)), rng.choice(VOCAB))
    return w


def generated_sets(n: int = 1200, seed: int = 17) -> list[tuple[str, list[str]]]:
    rng = random.Random(seed)
    out = []
    for s in range(n):
        vocab = VOCAB[: rng.choice([4, 8, 20, len(VOCAB)])]  # small vocabularies: many repeated words, many shifts
        length = rng.choice([0, 1, 2, 3, 4, 6, 8, 10, 12, 16, 20]) if s % 200 else rng.randint(30, 50)
        base = [rng.choice(vocab) for _ in range(length)]
        k = 45 if s % 400 == 7 else rng.randint(1, 5)
        refs = [" ".join(perturb(rng, base, rng.randint(0, 6))) for _ in range(k)]
        refs = [r if r.strip() else rng.choice(vocab) for r in refs]
        hyp = " ".join(perturb(rng, base, rng.randint(0, 8))) if rng.random() < 0.85 else \
            " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 20)))
        out.append((hyp, refs))
    return out


EDGE_CASES = [
    ("", ["the food is cheap ."]),  # empty hypothesis
    ("   ", ["the food is cheap .", "cheap food"]),  # whitespace-only hypothesis
    ("the food is cheap .", [""]),  # empty reference (sacrebleu: edits = hypothesis length, score 1)
    ("", [""]),  # both empty: 0
    ("the food is cheap .", ["", "the food is cheap ."]),
    ("The food is cheap.", ["The food is cheap."]),  # identical
    ("the food is cheap.", ["The Food Is Cheap."]),  # case only
    ("It's \"5-star\" (really)! Isn't it? £20-25, 3.5 stars.", ["it 's 5-star really ! is n't it ? £20-25 , 3.5 stars ."]),
    ("&quot;Café&quot; &amp; bar -- near the river...", ["\"café\" & bar near the river ..."]),
    ("東京 の ラーメン は 美味しい", ["ラーメン は 東京 の 美味しい"]),  # unicode, block move
    ("naïve Ünïcode смачна ½ €", ["NAÏVE ünïcode смачна €"]),
    ("a b c d e f g h", ["e f g h a b c d"]),  # pure block swap
    ("a a a a a a a a a a b b b b b b b b", ["b b b b b b b b a a a a a a a a a a"]),
    ("x " * 120, ["x " * 3]),  # very unequal lengths: the band matters
    ("y " * 2, ["y x " * 60]),
    # the band changes the distance: sacrebleu's beam gives 79 edits where Levenshtein gives 75
    (" ".join(f"t{i}" for i in range(75, 80)), [" ".join(f"t{i}" for i in range(80))]),
    (" ".join(f"t{i}" for i in list(range(40, 80)) + list(range(5))), [" ".join(f"t{i}" for i in range(80))]),
    ("the food is cheap", ["the food " * 30 + "is cheap"]),
    ("a b c d e f g h i j k l m n o p q r s t u v w x y z " * 3, ["z y x w v u t s r q p o n m l k j i h g f e d c b a"]),
    ("a a a b a a b a a a a b b b b b b a a b a a a b b b b b b a a b b a b",  # 1,000-candidate cap
     ["a b b b a a b a a b a b a b a b a b b a b a b b a b a a a a a a b a b"]),
    (" ".join(f"t{i}" for i in range(70)), [" ".join(f"t{i}" for i in list(range(35, 70)) + list(range(35)))]),
    ("the food", [f"the food is number {i}" for i in range(45)]),  # many references
]


@pytest.fixture(scope="module")
def sets():
    return generated_sets() + EDGE_CASES


@pytest.fixture(scope="module", autouse=True)
def memo_sacrebleu():
    """sacrebleu's translation_edit_rate is a pure function of the two word lists: remember its results so the
    tests below call it once per distinct pair (sacrebleu's TER class then runs its own code on top of it)."""
    import sacrebleu.metrics.ter as sacre_ter_module

    memo = {}

    def remembered(words_hyp, words_ref):
        key = (tuple(words_hyp), tuple(words_ref))
        if key not in memo:
            memo[key] = _REAL_TER(words_hyp, words_ref)
        return memo[key]

    mp = pytest.MonkeyPatch()
    mp.setattr(sacre_ter_module, "translation_edit_rate", remembered)
    mp.setattr(lib_ter, "translation_edit_rate", remembered)
    yield
    mp.undo()


def option_of(k: int) -> dict:
    return OPTIONS[k % len(OPTIONS)]


def test_limits_are_sacrebleus():
    assert (fast.MAX_SHIFT_SIZE, fast.MAX_SHIFT_DIST, fast.BEAM_WIDTH, fast.MAX_SHIFT_CANDIDATES) == (
        lib_ter._MAX_SHIFT_SIZE, lib_ter._MAX_SHIFT_DIST, lib_ter._BEAM_WIDTH, lib_ter._MAX_SHIFT_CANDIDATES)


def test_edit_counts_equal_sacrebleu_per_pair(sets):
    """Every hypothesis/reference pair (no reference pruning here) gets sacrebleu's number of edits."""
    n = 0
    for k, (hyp, refs) in enumerate(sets):
        tok = fast.tercom_tokenizer(**option_of(k))
        wh = tok(hyp.rstrip()).split()
        for r in refs:
            wr = tok(r.rstrip()).split()
            assert fast.edit_count(wh, wr) == lib_ter.translation_edit_rate(wh, wr)[0], (wh, wr)
            n += 1
    assert n > 3000


def test_the_data_reach_every_branch(sets):
    """Shifts, the 1,000-candidate cap and pairs where the band of sacrebleu's beam edit distance matters all
    occur (counted with sacrebleu's own functions on every tenth set and the edge cases)."""
    shifted = capped = banded = 0
    for k, (hyp, refs) in enumerate(sets):
        if k % 10 and k < len(sets) - len(EDGE_CASES):
            continue
        tok = fast.tercom_tokenizer(**option_of(k))
        wh = tok(hyp.rstrip()).split()
        for r in refs:
            wr = tok(r.rstrip()).split()
            edits, n_shifts, cap = sacre_edits_and_cap(wh, wr)
            assert edits == lib_ter.translation_edit_rate(wh, wr)[0] == fast.edit_count(wh, wr)
            shifted += n_shifts > 0
            capped += cap
            banded += bool(wh and wr) and max(len(wh), len(wr)) >= fast._band_margin(len(wh), len(wr))
    assert shifted > 100 and capped >= 1 and banded >= 5, (shifted, capped, banded)


def test_segment_stats_and_sentence_scores_equal_sacrebleu(sets):
    assert len(sets) >= 1000
    for k, (hyp, refs) in enumerate(sets):
        opt = option_of(k)
        expect = sacre_stats(hyp, refs, **opt)
        tok = fast.tercom_tokenizer(**opt)
        got = fast.ter_stats(tok(hyp.rstrip()).split(), [tok(r.rstrip()).split() for r in refs])
        assert list(got) == list(expect) and type(got[0]) is type(expect[0]), (hyp, refs, opt)
        assert fast.sentence_ter(hyp, refs, **opt) == SacreTER(**opt).sentence_score(hyp, refs).score


def test_scorer_equals_sacrebleu_in_every_mode(sets):
    """The ``ter`` scorer (0-1) against sacrebleu's scores / 100, for its option mapping and modes."""
    for tokenize, lowercase, opt_k in (("space", None, 0), ("13a", False, 3)):
        sub = [(h, [r for r in rr if r.strip()]) for k, (h, rr) in enumerate(sets) if k % 4 == opt_k]
        sub = [(h, rr) for h, rr in sub if rr]
        hyps, refs = [h for h, _ in sub], [rr for _, rr in sub]
        sacre = SacreTER(**OPTIONS[opt_k])
        assert OPTIONS[opt_k] == dict(normalized=tokenize == "13a", case_sensitive=lowercase is False)
        native = qe.load("ter", tokenize=tokenize, lowercase=lowercase).score(hyps, refs=refs, progress=False)
        assert native == [sacre.sentence_score(h, rr).score / 100.0 for h, rr in sub]
        per_ref = [[sacre.sentence_score(h, [r]).score / 100.0 for r in rr] for h, rr in sub]
        assert qe.load("ter", mode="max", tokenize=tokenize, lowercase=lowercase).score(
            hyps, refs=refs, progress=False) == [min(p) for p in per_ref]
        assert qe.load("ter", mode="first", tokenize=tokenize, lowercase=lowercase).score(
            hyps, refs=refs, progress=False) == [p[0] for p in per_ref]
        streams = [[rr[j] if j < len(rr) else None for rr in refs] for j in range(max(map(len, refs)))]
        assert qe.load("ter", tokenize=tokenize, lowercase=lowercase).corpus_score(hyps, refs) == \
            sacre.corpus_score(hyps, streams).score / 100.0


def test_bit_parallel_columns_are_levenshtein():
    rng = random.Random(3)
    for _ in range(300):
        h = [rng.choice("abcd") for _ in range(rng.randint(1, 12))]
        r = [rng.choice("abcd") for _ in range(rng.randint(1, 70))]  # past 64 bits too
        d = list(range(len(r) + 1))
        for x in h:
            nd = [d[0] + 1]
            for j, y in enumerate(r, 1):
                nd.append(min(d[j - 1] + (x != y), d[j] + 1, nd[j - 1] + 1))
            d = nd
        peq = {}
        for j, y in enumerate(r):
            peq[y] = peq.get(y, 0) | (1 << j)
        m = len(r)
        cols = fast._columns([peq.get(x, 0) for x in h], m, (1 << m) - 1, 1 << (m - 1))
        assert cols[-1][2] == d[-1]
        assert [fast._column_values(cols)(len(h), j) for j in range(m + 1)] == d


def test_fewer_full_searches_than_references():
    """The bag-of-words bound skips references: an output equal to one of 45 references needs one search."""
    calls = []
    orig = fast.edit_count

    def counting(*a, **k):
        calls.append(1)
        return orig(*a, **k)

    fast.edit_count = counting
    try:
        refs = [f"the food is number {i} here" for i in range(44)] + ["the food is cheap here"]
        assert fast.sentence_ter("the food is cheap here", refs) == 0.0
    finally:
        fast.edit_count = orig
    assert len(calls) == 1


# ---- real multi-reference data ---------------------------------------------------------------------------------
@needs_data
def test_e2e_and_emnlp17_equal_sacrebleu():
    from qe.data import load_dataset

    e2e = load_dataset("e2e", version="original", split="test")
    rng = random.Random(0)
    sets = []
    for i in rng.sample(range(len(e2e)), 15):  # each reference against the other references of its MR
        r = e2e[i]
        sets.append((r.output, [x for x in r.refs if x != r.output] or r.refs))
    emnlp = [r for r in load_dataset("emnlp17_refs") if r.refs]
    sets += [(r.output, list(r.refs)) for r in rng.sample(emnlp, 80)]
    assert sum(len(rr) for _, rr in sets) > 300
    for k, (hyp, refs) in enumerate(sets):
        opt = OPTIONS[k % 2]  # the scorer's two tokenisations, case-insensitive (its default)
        assert fast.sentence_ter(hyp, refs, **opt) == SacreTER(**opt).sentence_score(hyp, refs).score, (hyp, refs)
