"""Reference-based metrics: known values (library examples, hand computation), multi-reference modes, empties."""
import math

import numpy as np
import pytest
from conftest import needs_data

import qe
from qe.errors import MissingInputError
from qe.refmetrics.overlap import edit_distance
from qe.refmetrics.rouge import skip_bigrams, wlcs

# sacrebleu's README example (three outputs, two reference streams)
SYS = ["The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."]
REFS_STREAMS = [["The dog bit the man.", "It was not unexpected.", "The man bit him first."],
                ["The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."]]
REFS = [list(r) for r in zip(*REFS_STREAMS)]  # per output


def s1(name, hyp, refs, **kw):
    return qe.load(name, **kw).score([hyp], refs=[refs], progress=False)[0]


# ---- field libraries' own examples -------------------------------------------------------------------------
def test_sacrebleu_readme_corpus_scores():
    assert qe.load("bleu-4").corpus_score(SYS, REFS) == pytest.approx(0.4853, abs=5e-5)
    assert qe.refmetrics.corpus_bleu(SYS, REFS) == pytest.approx(0.4853, abs=5e-5)
    assert qe.load("chrf").corpus_score(SYS, REFS) == pytest.approx(0.5973, abs=5e-5)
    # sacrebleu 2.x's TER with its defaults (case-insensitive, no normalisation) on the same example: 40.00
    assert qe.load("ter").corpus_score(SYS, REFS) == pytest.approx(0.40, abs=5e-5)


def test_corpus_bleu_with_unequal_reference_counts():
    # the second output has one reference: sacrebleu gets a None in the second stream
    b = qe.load("bleu-4").corpus_score(["the cat sat on the mat", "a dog ran"], [["the cat sat on the mat", "x"], ["a dog ran"]])
    assert b == pytest.approx(1.0)


def test_rouge_score_readme_example():
    ref, hyp = "The quick brown fox jumps over the lazy dog", "The quick brown dog jumps on the log."
    assert s1("rouge-1", hyp, [ref], measure="p") == pytest.approx(0.75)
    assert s1("rouge-1", hyp, [ref], measure="r") == pytest.approx(6 / 9)
    assert s1("rouge-1", hyp, [ref]) == pytest.approx(0.7058823529411765)
    assert s1("rouge-l", hyp, [ref]) == pytest.approx(0.5882352941176471)
    # 2-grams: the quick, quick brown -> P 2/7, R 2/8
    assert s1("rouge-2", hyp, [ref]) == pytest.approx(2 * (2 / 7) * (2 / 8) / (2 / 7 + 2 / 8))


def test_sentence_bleu_known_values():
    assert s1("bleu-4", "the cat sat on the mat", ["the cat sat on the mat"]) == pytest.approx(1.0)
    # no 4-gram match and no smoothing -> 0; exp smoothing keeps it positive
    hyp, ref = "the cat sat on a mat", "the cat lay on a mat"
    assert s1("bleu-4", hyp, [ref], smooth_method="none") == 0.0
    assert 0 < s1("bleu-4", hyp, [ref]) < 1
    # BLEU-1 = unigram precision 5/6, no brevity penalty (same length)
    assert s1("bleu-1", hyp, [ref]) == pytest.approx(5 / 6)
    # BLEU-2 = sqrt(5/6 * 3/5)
    assert s1("bleu-2", hyp, [ref]) == pytest.approx(math.sqrt(5 / 6 * 3 / 5))


def test_ter_and_chrf_sentence():
    assert s1("ter", "the cat", ["the cat sat"]) == pytest.approx(1 / 3)
    assert s1("ter", "the cat sat", ["the cat sat"]) == 0.0
    assert s1("chrf", "the cat sat", ["the cat sat"]) == pytest.approx(1.0)


# ---- hand-computed cases for the hand-written metrics ------------------------------------------------------
def test_rouge_w_hand_computed():
    # Lin (2004), section 4: X = A B C D E F G; Y1 = A B C D H I K (one run of 4); Y2 = A H B K C I D (4 runs of 1)
    X, Y1, Y2 = list("ABCDEFG"), list("ABCDHIK"), list("AHBKCID")
    assert wlcs(X, Y1) == pytest.approx(4**1.2)
    assert wlcs(X, Y2) == pytest.approx(4.0)
    # ref "a b c d", out "a b x d": WLCS = f(2) + f(1); R = P = (WLCS / 4^1.2)^(1/1.2)
    w = 2**1.2 + 1
    expect = (w / 4**1.2) ** (1 / 1.2)
    assert expect == pytest.approx(0.675693, abs=1e-6)  # 3.297397 / 5.278032 = 0.624741; ^(1/1.2)
    assert s1("rouge-w", "a b x d", ["a b c d"]) == pytest.approx(expect)
    # recall vs precision with different lengths: out "a b" vs ref "a b c d": WLCS = 2^1.2
    assert s1("rouge-w", "a b", ["a b c d"], measure="r") == pytest.approx((2**1.2 / 4**1.2) ** (1 / 1.2))
    assert s1("rouge-w", "a b", ["a b c d"], measure="p") == pytest.approx(1.0)


def test_rouge_su4_hand_computed():
    toks = list("abcdefg")
    sb = skip_bigrams(toks, 4)
    assert sum(sb.values()) == 5 + 5 + 4 + 3 + 2 + 1
    assert ("a", "f") in sb and ("a", "g") not in sb  # a..f has 4 words between, a..g has 5
    # ref "a b c": skip bigrams ab ac bc + unigrams a b c = 6; out "a c b": ac ab cb + a c b; matches ab ac a b c = 5
    assert s1("rouge-su4", "a c b", ["a b c"]) == pytest.approx(5 / 6)
    assert s1("rouge-s4", "a c b", ["a b c"]) == pytest.approx(2 / 3)


def test_string_edit_hand_computed_and_lcs_identity():
    assert edit_distance(list("abc"), list("axc")) == 2.0  # one substitution at cost 2
    assert edit_distance(list("ab"), list("abc")) == 1.0
    assert edit_distance(list("abc"), list("xyz"), sub=1) == 3.0
    assert s1("se", "a b c", ["a x c"]) == pytest.approx(1 - 2 / 6)
    assert s1("se", "a b", ["a b c"]) == pytest.approx(1 - 1 / 5)
    # Reiter & Belz: the mean over references
    assert s1("se", "a b c", ["a x c", "a b"]) == pytest.approx(((1 - 2 / 6) + (1 - 1 / 5)) / 2)
    # with sub = 2 = ins + del, SE equals the LCS F-measure (ROUGE-L F on the same tokens)
    rng = np.random.default_rng(0)
    for _ in range(20):
        h = " ".join(rng.choice(list("abcde"), rng.integers(1, 9)))
        r = " ".join(rng.choice(list("abcde"), rng.integers(1, 9)))
        assert s1("se", h, [r], tokenize="rouge") == pytest.approx(s1("rouge-l", h, [r]))


def test_lr2_lr3_hand_computed():
    hyp = "the cat sat on the mat"
    refs = ["the cat is on the mat", "a cat sat on a mat"]
    # bigram sets: hyp 5, union 10, all 5 hyp bigrams in the union
    assert s1("lr2-r-mult", hyp, refs) == pytest.approx(0.5)
    assert s1("lr2-f-mult", hyp, refs) == pytest.approx(2 * 0.5 / 1.5)
    # trigrams: hyp 4, union 8, matches "cat sat on", "on the mat"
    assert s1("lr3-r-mult", hyp, refs) == pytest.approx(0.25)
    assert s1("lr3-f-mult", hyp, refs) == pytest.approx(2 * 0.25 * 0.5 / 0.75)


def test_cider_d_hand_computed():
    # unigram-only CIDEr-D on a set of two outputs: N = 2, each n-gram in one reference set -> idf = ln 2
    sc = qe.load("cider-d", n=1)
    got = sc.score(["a b", "c"], refs=[["a b"], ["c d"]], progress=False)
    assert got[0] == pytest.approx(10.0)  # identical vectors, same length
    # "c" vs "c d": cos = 1/sqrt(2); bigram counts 0 vs 1 -> penalty exp(-1/72)
    assert got[1] == pytest.approx(10 * math.exp(-1 / 72) / math.sqrt(2))
    # one output alone: idf ln(1) - ln(1) = 0 everywhere -> 0 (CIDEr needs a set)
    assert sc.score(["a b"], refs=[["a b"]], progress=False) == [0.0]


def test_meteor_exact_and_stem_without_wordnet():
    m = qe.load("meteor", synonyms="off")
    assert "syn:off" in m.signature
    # exact match of 4 words in one chunk: Fmean 1, penalty 0.5 * (1/4)^3
    assert m.score(["a b c d"], refs=[["a b c d"]], progress=False)[0] == pytest.approx(1 - 0.5 / 64)
    # Porter stems match (cats/cat, runs/run): 2 matches, 1 chunk -> penalty 0.5 * (1/2)^3
    assert m.score(["cats runs"], refs=[["cat run"]], progress=False)[0] == pytest.approx(1 - 0.5 / 8)


def test_nist_matches_nltk_where_defined():
    from nltk.translate.nist_score import sentence_nist

    hyp = "the restaurant serves cheap italian food in the city centre"
    ref = "the cheap restaurant serves italian food near the centre of the city"
    want = sentence_nist([ref.split()], hyp.split(), n=5)
    got = s1("nist-5", hyp, [ref], info="sentence", tokenize="space")
    assert got == pytest.approx(want, rel=1e-9)
    # outputs shorter than 5 words (nltk divides by zero): defined here
    assert s1("nist-5", "the food", ["the food is good"]) > 0


# ---- multi-reference modes ---------------------------------------------------------------------------------
def test_modes_max_mean_first_jackknife():
    hyp, refs = "the cat sat on the mat", ["the cat is on the mat", "a dog", "the cat sat on a mat"]
    per = [s1("rouge-l", hyp, [r]) for r in refs]
    assert s1("rouge-l", hyp, refs, mode="max") == pytest.approx(max(per))
    assert s1("rouge-l", hyp, refs, mode="mean") == pytest.approx(np.mean(per))
    assert s1("rouge-l-single", hyp, refs) == pytest.approx(per[0])
    jk = np.mean([max(per[1], per[2]), max(per[0], per[2]), max(per[0], per[1])])
    assert s1("rouge-l", hyp, refs, mode="jackknife") == pytest.approx(jk)
    # TER is lower-is-better: "max" keeps the best (smallest) value
    ter = [s1("ter", hyp, [r]) for r in refs]
    assert s1("ter", hyp, refs, mode="max") == pytest.approx(min(ter))
    # BLEU native multi-reference clipping differs from the best single reference
    assert s1("bleu-2", hyp, refs) >= s1("bleu-2", hyp, refs, mode="max")
    # coco-caption's ROUGE-L: best P and best R over references (here from different references), then F
    pr = [qe.load("rouge-l", measure=m).score([hyp], refs=[[r]], progress=False)[0] for r in refs for m in ("p",)]
    rr = [qe.load("rouge-l", measure="r").score([hyp], refs=[[r]], progress=False)[0] for r in refs]
    P, R = max(pr), max(rr)
    assert s1("rouge-l", hyp, refs, mode="max-pr") == pytest.approx(2 * P * R / (P + R))
    # ROUGE-2 union: hyp bigrams {the cat, cat sat, sat on, on the, the mat}; pooled refs: ref1 5 + ref2 1 +
    # ref3 5 bigrams, max counts -> {the cat, cat is, is on, on the, the mat, a dog, cat sat, sat on, on a, a mat}
    # = 10; matches 5 -> R = 0.5, P = 1
    assert s1("rouge-2", hyp, refs, mode="union", measure="r") == pytest.approx(0.5)
    assert s1("rouge-2", hyp, refs, mode="union", measure="p") == pytest.approx(1.0)
    # union of skip-bigram multisets
    assert s1("rouge-su4", hyp, refs, mode="union", measure="p") >= s1("rouge-su4", hyp, refs, mode="max", measure="p")


def test_unsupported_mode_is_an_error():
    with pytest.raises(ValueError, match="mode='union'"):
        qe.load("rouge-l", mode="union")
    with pytest.raises(ValueError, match="mode='native'"):
        qe.load("rouge-l", mode="native")
    with pytest.raises(TypeError, match="unknown option"):
        qe.load("se", colour="red")


# ---- empty inputs --------------------------------------------------------------------------------------------
SIMILARITY = ["bleu-1", "bleu-4", "nist-5", "rouge-1", "rouge-4", "rouge-l", "rouge-w", "rouge-su4", "meteor",
              "cider-d", "chrf", "chrf++", "se", "lr2-f-mult", "lr3-r-mult"]


@pytest.mark.parametrize("name", SIMILARITY)
def test_empty_output_scores_zero(name):
    got = qe.load(name).score(["", "the cat sat on the mat ."], refs=[["the cat"], ["the cat sat on a mat ."]],
                              progress=False)
    assert got[0] == 0.0 and got[1] > 0


def test_empty_output_ter_is_one_and_refs_handling():
    assert s1("ter", "", ["the cat sat"]) == 1.0
    with pytest.raises(MissingInputError, match="output 1 has no non-empty reference"):
        qe.load("bleu-4").score(["a", "b"], refs=[["a"], ["", "  "]], progress=False)
    with pytest.raises(MissingInputError, match="needs references"):
        qe.load("rouge-l").score(["a"], progress=False)
    got = qe.load("rouge-l", missing_refs="nan").score(["a b", "b"], refs=[["a b"], []], progress=False)
    assert got[0] == 1.0 and math.isnan(got[1])
    # empty references are dropped, the rest used
    assert s1("rouge-l", "a b", ["", "a b"], mode="mean") == 1.0
    with pytest.raises(ValueError, match="got 1 entries for 2 outputs"):
        qe.load("se").score(["a", "b"], refs=[["a"]], progress=False)


def test_order_and_determinism_and_signature():
    outs = ["the cat sat", "a dog ran far away", "", "the cat"]
    refs = [["the cat sat"], ["a dog ran"], ["x"], ["the cat sat", "cat"]]
    sc = qe.load("rouge-su4")
    a = sc.score(outs, refs=refs, progress=False)
    b = [sc.score([o], refs=[r], progress=False)[0] for o, r in zip(outs, refs)]
    assert a == b == sc.score(outs, refs=refs, progress=False)
    for name in ("bleu-4", "rouge-l-mult", "meteor", "cider-d", "ter", "se", "lr3-f-mult", "nist-5"):
        sig = qe.load(name).signature
        assert "mode:" in sig and "qe:" in sig


def test_describe_lists_presets():
    text = qe.refmetrics.describe()
    assert "rouge-l-mult" in text and "Kann" in text and "se " in text


def test_bleu_other_tokenisers_and_rouge_beta():
    hyp, ref = "the cat sat on the mat .", "the cat sat on the mat"
    assert s1("bleu-4", hyp, [ref]) < 1.0  # 13a keeps "." as a token
    assert s1("bleu-4", hyp, [ref], tokenize="13a-nopunct") == pytest.approx(1.0)
    sc = qe.load("bleu-4", tokenize="13a-nopunct", smooth_method="none", effective_order=False)
    assert "tok:13a-nopunct" in sc.signature and "eff:no" in sc.signature
    assert sc.corpus_score([hyp], [[ref]]) == pytest.approx(1.0)
    # coco-caption's ROUGE-L: F with beta 1.2 from P = 5/8, R = 5/9 (rouge-score README pair)
    p, r = 0.625, 5 / 9
    got = s1("rouge-l", "The quick brown dog jumps on the log.", ["The quick brown fox jumps over the lazy dog"], beta=1.2)
    assert got == pytest.approx((1 + 1.44) * p * r / (r + 1.44 * p))


def test_delexicalise_for_the_emnlp17_comparison_is_the_mr_modules():
    """experiments/kann2018.py's variant C uses the MR module's text-level mode (one delexicaliser in the project):
    every whole-word occurrence of a non-binary value becomes x-<slot>, the text is otherwise kept."""
    from experiments.kann2018 import delexicalise
    from qe.ratpred.mr import delexicalise_text

    mr = "inform(name='hotel metropolis',address='25 mason st',phone='4157754600',hasinternet='yes')"
    text = "Hotel Metropolis is located at 25 mason st, phone 4157754600. it has internet"
    got = delexicalise(text, mr)
    assert got == "x-name is located at x-address, phone x-phone. it has internet"
    assert got == delexicalise_text(text, mr)
    # the docs' example: name, address and phone become one token each -> 11 tokens without punctuation
    hyp = delexicalise("hotel metropolis is located at 25 mason st, and their phone number is 4157754600.", mr)
    assert len(hyp.replace(",", " ").replace(".", " ").split()) == 11


def test_refmetrics_describe_from_a_fresh_import():
    """README: ``import qe; qe.refmetrics.describe()`` works (qe imports its families lazily)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", "import qe; print(qe.refmetrics.describe())"], capture_output=True,
                         text=True, check=True).stdout
    assert "rouge-l-mult" in out and "bleu-4" in out and "ds-focus" not in out


@needs_data
def test_emnlp17_bagel_agrees_with_the_authors_columns():
    """Same metric, same outputs, same references: on BAGEL (unambiguous references) our TER reproduces the
    authors' TER column and coco-style BLEU-4 / ROUGE-L correlate > 0.95 with theirs (docs/results/refmetrics.md)."""
    from qe.data.datasets import load_dataset

    recs = load_dataset("emnlp17_refs", datasets=["BAGEL"])
    outs, refs = [r.output for r in recs], [r.refs for r in recs]
    ter = np.array(qe.load("ter").score(outs, refs=refs, progress=False))
    theirs = np.array([r.metrics["TER"] for r in recs])
    assert np.mean(np.abs(ter - theirs) < 1e-6) > 0.99
    bleu = qe.load("bleu-4", tokenize="13a-nopunct", smooth_method="none", effective_order=False)
    b = np.array(bleu.score(outs, refs=refs, progress=False))
    assert np.corrcoef(b, [r.metrics["Bleu_4"] for r in recs])[0, 1] > 0.99
    rl = np.array(qe.load("rouge-l", beta=1.2, tokenize="13a-nopunct").score(outs, refs=refs, progress=False))
    assert np.corrcoef(rl, [r.metrics["ROUGE_L"] for r in recs])[0, 1] > 0.95


# ---- ROUGE-1.5.5 compatibility, corpus-level scores (issue 16) ------------------------------------------------
def test_rouge_w_rouge155_definition_prints_what_rouge155_prints():
    # ROUGE-1.5.5 (-w 1.2) for peer "police kill the gunman", model "police killed the gunman" prints
    # ROUGE-W-1.2 R 0.51208, P 0.67569, F 0.58262 (its recall divides by f(f(|model|)), see qe/refmetrics/rouge.py);
    # Lin's definition gives 0.67569 for all three.
    out, ref = "police kill the gunman", ["police killed the gunman"]
    for measure, want in (("r", 0.51208), ("p", 0.67569), ("f", 0.58262)):
        assert s1("rouge-w", out, ref, measure=measure, definition="rouge155") == pytest.approx(want, abs=5e-6)
        assert s1("rouge-w", out, ref, measure=measure) == pytest.approx(0.67569, abs=5e-6)
    assert "def:rouge155" in qe.load("rouge-w", definition="rouge155").signature
    with pytest.raises(ValueError, match="definition"):
        qe.load("rouge-w", definition="perl")


def test_rouge155_f_a_pools_counts_and_f_b_takes_the_best_recall_reference():
    out = "the cat sat on the mat"
    refs = ["the cat", "the cat sat on the mat today now"]
    # ROUGE-1 hits: ref 1: 2 of 2 (R 1, P 2/6); ref 2: 6 of 8 (R 0.75, P 1)
    # -f A: R = (2 + 6) / (2 + 8) = 0.8, P = (2 + 6) / (6 + 6) = 2/3, F = 2PR / (P + R)
    p, r = 8 / 12, 0.8
    assert s1("rouge-1", out, refs, mode="rouge155-a", measure="r") == pytest.approx(r)
    assert s1("rouge-1", out, refs, mode="rouge155-a", measure="p") == pytest.approx(p)
    assert s1("rouge-1", out, refs, mode="rouge155-a") == pytest.approx(2 * p * r / (p + r))
    # -f B: the best-recall reference is ref 1 (R 1), so F = 2 * 1 * 1/3 / (4/3) = 0.5; mode max keeps ref 2's F
    assert s1("rouge-1", out, refs, mode="rouge155-b") == pytest.approx(0.5)
    assert s1("rouge-1", out, refs, mode="max") == pytest.approx(2 * 0.75 / 1.75)
    # ROUGE-L: LCS 2 with ref 1, 6 with ref 2 -> the same numbers here
    assert s1("rouge-l", out, refs, mode="rouge155-a", measure="r") == pytest.approx(0.8)
    # ROUGE-W (-f A, ROUGE-1.5.5 definition): hits f(2) and f(6), reference weights f(f(2)) + f(f(8))
    w = 1.2
    want_r = ((2**w + 6**w) / ((2**w) ** w + (8**w) ** w)) ** (1 / w)
    assert s1("rouge-w", out, refs, mode="rouge155-a", measure="r") == pytest.approx(want_r)
    # one reference: -f A = -f B = the single-reference score
    assert s1("rouge-2", out, refs[1:], mode="rouge155-a") == pytest.approx(s1("rouge-2", out, refs[1:]))


def test_nist_corpus_score_pools_counts_as_mteval():
    from nltk.translate.nist_score import corpus_nist

    hyps = ["the restaurant serves cheap italian food in the city centre",
            "there is a cheap pub near the river called the eagle",
            "the golden fork is a moderately priced restaurant", "x y z w v u t"]
    refs = [["the cheap restaurant serves italian food near the centre of the city"],
            ["the eagle is a cheap pub by the river"],
            ["the golden fork is a restaurant with moderate prices in riverside"], ["a b c d e f g h"]]
    scorer = qe.load("nist-5", tokenize="space")
    got = scorer.corpus_score(hyps, refs)
    # nltk's corpus_nist pools numerators and denominators over the corpus like mteval (one reference each)
    assert got == pytest.approx(corpus_nist([[r[0].split()] for r in refs], [h.split() for h in hyps], n=5), rel=1e-9)
    mean = float(np.mean(scorer.score(hyps, refs=refs, progress=False)))
    assert abs(got - mean) > 0.3  # not the mean of sentence scores
    assert qe.load("nist-5").CORPUS == "pooled" and qe.load("bleu-4").CORPUS == "pooled"
    assert qe.load("rouge-l").CORPUS == "mean" and qe.load("cider-d").CORPUS == "mean"
