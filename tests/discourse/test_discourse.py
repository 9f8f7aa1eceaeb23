"""DiscoScore and the discourse baselines on small hand-made texts."""
import math

import numpy as np
import pytest

from conftest import needs_data
from qe.discourse import metrics as M
from qe.core.encoder import assign_to_windows, window_starts
from qe.discourse.foci import ParsedText, Word, WordVectors, entity_foci, group_lemmas, sentence_foci

# ------------------------------------------------------------------------------------------------------------
# hand-built parsed texts (no spaCy): words are (lemma, pos, sentence)


def make_parsed(sentences: list[list[tuple[str, str]]]) -> ParsedText:
    words, nouns, spans, pos = [], {}, [], 0
    for si, sent in enumerate(sentences):
        start = pos
        for lemma, tag in sent:
            words.append(Word(pos, pos + len(lemma), lemma, tag, si))
            if tag in ("NOUN", "PROPN"):
                nouns.setdefault(lemma, []).append(len(words) - 1)
            pos += len(lemma) + 1
        spans.append((start, pos - 1))
    return ParsedText(" ".join(w.lemma for w in words), spans, words, nouns)


N, V, D = "NOUN", "VERB", "DET"
# "the cat see the dog . the cat run . a bird sing ."
CAT_TEXT = make_parsed([[("the", D), ("cat", N), ("see", V), ("the", D), ("dog", N)],
                        [("the", D), ("cat", N), ("run", V)],
                        [("a", D), ("bird", N), ("sing", V)]])


def test_adjacency_unweighted_and_weighted_match_definitions():
    sf = [{"a", "b"}, {"a"}, {"c"}, {"a", "b", "c"}]
    A_u = M.sentence_adjacency(sf, weighted=False)
    A_w = M.sentence_adjacency(sf, weighted=True)
    exp_u = np.zeros((4, 4))
    exp_w = np.zeros((4, 4))
    # pairs i<j sharing foci: (0,1) a; (0,3) a,b; (1,3) a; (2,3) c
    for (i, j), a in {(0, 1): 1, (0, 3): 2, (1, 3): 1, (2, 3): 1}.items():
        exp_u[i, j] = 1 / (j - i)
        exp_w[i, j] = a / (j - i)
    np.testing.assert_allclose(A_u, exp_u)
    np.testing.assert_allclose(A_w, exp_w)
    assert A_w[0, 3] == pytest.approx(2 / 3) and A_u[0, 3] == pytest.approx(1 / 3)
    assert np.all(np.tril(A_u) == 0)  # A_ij = 0 for j <= i


def test_noun_foci_sentence_foci_and_rc_lc_values():
    foci = CAT_TEXT.noun_foci()
    assert foci == {("cat",): [1, 6], ("dog",): [4], ("bird",): [9]}
    assert sentence_foci(CAT_TEXT, foci) == [{("cat",), ("dog",)}, {("cat",)}, {("bird",)}]
    rc, lc = M.rc_lc(CAT_TEXT)
    assert rc == pytest.approx(2 / 3)  # cat occurs twice; 3 noun types
    assert lc == pytest.approx(1 / 3)  # 1 of 3 noun types repeats
    assert M.rc_lc(make_parsed([[("run", V), ("quickly", "ADV")]])) is None  # no nouns: undefined
    # Entity Graph: one edge (0,1) with weight 1/(1-0) -> average out-degree 1/3
    A = M.sentence_adjacency(sentence_foci(CAT_TEXT, foci))
    assert M.graph_outdegree(A) == pytest.approx(1 / 3)
    assert M.focus_frequency(foci) == 2.0 and M.connectivity(A) == pytest.approx(1 / 9)


@pytest.fixture
def vec_file(tmp_path):
    # car ~ vehicle (cos 0.96), car ~ automobile (cos 0.6), banana orthogonal to all
    rows = {"car": [1, 0, 0], "vehicle": [0.96, 0.28, 0], "automobile": [0.6, 0, 0.8], "banana": [0, -1, 0]}
    p = tmp_path / "vec.txt"
    p.write_text("4 3\n" + "".join(f"{w} {' '.join(map(str, v))}\n" for w, v in rows.items()))
    return WordVectors(str(p))


def test_entity_grouping_by_vector_threshold(vec_file):
    lemmas = ["car", "vehicle", "automobile", "banana", "unknownword"]
    assert group_lemmas(lemmas, vec_file, 0.8) == [("automobile",), ("banana",), ("car", "vehicle"), ("unknownword",)]
    # at 0.5 (the paper's MT threshold) automobile joins; grouping is transitive (connected components)
    assert group_lemmas(lemmas, vec_file, 0.5) == [("automobile", "car", "vehicle"), ("banana",), ("unknownword",)]
    p = make_parsed([[("the", D), ("car", N), ("stop", V)], [("a", D), ("vehicle", N), ("pass", V)]])
    foci = entity_foci(p, group_lemmas(list(p.nouns), vec_file, 0.8))
    assert foci == {("car", "vehicle"): [1, 4]}
    # one entity spanning both sentences links them
    assert M.sentence_adjacency(sentence_foci(p, foci))[0, 1] == 1.0
    # Lexical Graph links sentences through similar (not identical) nouns
    assert M.lexical_adjacency(p, vec_file, 0.7)[0, 1] == 1.0
    assert M.lexical_adjacency(p, vec_file, 0.99)[0, 1] == 0.0


def test_ds_focus_equations_on_arrays():
    hyp = {("cat",): [0, 2], ("dog",): [1]}
    ref = {("cat",): [0], ("bird",): [1]}
    Zh = np.array([[1.0, 0], [0, 1], [1, 0]])
    Zr = np.array([[1.0, 0], [0, 1]])
    # F_cat(hyp) = (2,0), F_cat(ref) = (1,0): distance 1; N = 2 hypothesis foci
    assert M.ds_focus(hyp, Zh, ref, Zr) == pytest.approx(0.5)
    assert M.ds_focus(hyp, Zh, ref, Zr, average="recall") == pytest.approx(0.5)
    assert M.ds_focus(hyp, Zh, ref, Zr, average="f") == pytest.approx(0.5)
    Zh2 = np.array([[3.0, 0], [0, 1], [0, 0]])  # F_cat = (3,0): distance 2, squared 4
    assert M.ds_focus(hyp, Zh2, ref, Zr) == pytest.approx(1.0)
    assert M.ds_focus(hyp, Zh2, ref, Zr, distance="squared") == pytest.approx(2.0)
    assert M.ds_focus(hyp, Zh, hyp, Zh) == 0.0  # identical: perfect (distance 0)
    assert M.ds_focus({("x",): [0]}, Zh, ref, Zr) is None  # no common focus


def test_ds_sent_graph_embedding():
    S = np.array([[1.0, 0, 0], [0, 1, 0], [0, 0, 1]])
    A = M.sentence_adjacency([{"a"}, {"a"}, set()])
    g = M.graph_embedding(S, A, normalize=False)
    S_hat = np.array([[1.0, 1, 0], [0, 1, 0], [0, 0, 1]])  # (A + I) S
    np.testing.assert_allclose(g, np.concatenate([S_hat.mean(0), S_hat.max(0), S_hat.min(0), S_hat.sum(0)]))
    assert M.ds_sent(S, A, S, A) == pytest.approx(1.0)
    assert M.ds_sent(S, A, S[::-1], np.zeros((3, 3))) < 1.0  # different graphs differ


def test_lexical_chain_and_discriminativeness():
    hyp = make_parsed([[("cat", N)], [("cat", N), ("dog", N)], [("dog", N)]])
    ref = make_parsed([[("cat", N)], [("bird", N)], [("cat", N)]])
    assert M.lexical_chains(hyp) == {"cat": {0, 1}, "dog": {1, 2}}
    # cat: common sentence {0} of the reference chain {0, 2} -> 1/2; dog not in the reference
    assert M.lexical_chain_score(hyp, ref) == pytest.approx(0.5)
    assert M.lexical_chain_score(hyp, ref, average="mean") == pytest.approx(0.25)
    assert M.lexical_chain_score(hyp, hyp, average="mean") == pytest.approx(1.0)
    d = M.discriminativeness([3, 1, 2, math.nan], [1, 1, 5, 0])
    assert d["n"] == 3 and d["D"] == pytest.approx(1 / 3) and d["equal"] == pytest.approx(1 / 3)
    assert d["ref_gt_hyp"] == pytest.approx(1 / 3)


def test_sliding_window_plan():
    assert window_starts(5, 8, 4) == [0]
    assert window_starts(20, 8, 4) == [0, 4, 8, 12]
    owner = assign_to_windows(20, 8, [0, 4, 8, 12])
    assert owner[0] == 0 and owner[19] == 3 and len(set(owner)) == 4
    # every piece is inside the window that owns it
    st = np.array([0, 4, 8, 12])[owner]
    assert np.all((np.arange(20) >= st) & (np.arange(20) < st + 8))


# ------------------------------------------------------------------------------------------------------------
# end to end with spaCy and a tiny random BERT (offline)

WORDS = ("the a cat dog mat sat on was happy barked at run quickly . ! and bird sang saw ran it is "
         "very long text with many words").split()


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    d = tmp_path_factory.mktemp("tinybert")
    (d / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    tok = BertTokenizerFast(vocab_file=str(d / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(WORDS) + 5, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=24)
    BertModel(cfg).save_pretrained(d)
    tok.save_pretrained(d)
    return str(d)


@pytest.fixture(scope="module")
def engine(tiny_bert):
    from qe.discourse.engine import DiscourseEngine

    return DiscourseEngine(model=tiny_bert, device="cpu")


def test_long_text_sliding_windows_do_not_truncate(tiny_bert):
    from qe.core.encoder import ContextualEncoder

    enc = ContextualEncoder(tiny_bert, device="cpu")
    assert enc.window == 22  # 24 positions - [CLS] - [SEP]
    long = " ".join(["the cat sat on the mat ."] * 10)  # 70 pieces > 22
    pe = enc.encode([long])[0]
    assert pe.vectors.shape == (70, 32) and np.isfinite(pe.vectors).all()
    first = enc.encode([" ".join(long.split()[:22])])[0].vectors
    owner = assign_to_windows(70, enc.window, window_starts(70, enc.window, enc.stride))
    own0 = np.nonzero(owner == 0)[0]
    np.testing.assert_allclose(pe.vectors[own0], first[own0], atol=1e-5)  # same context -> same vectors


def test_scorers_identical_texts_give_perfect_scores(engine):
    from qe.discourse.scorer import DSFocusScorer, DSSentScorer, LexicalChainScorer

    text = "The cat sat on the mat. The cat was happy. A dog barked at the cat."
    for focus in ("nn", "entity"):
        assert DSFocusScorer(focus, engine=engine).score([text], refs=[text], progress=False) == [0.0]
        for w in (False, True):
            s = DSSentScorer(focus, w, engine=engine).score([text], refs=[text], progress=False)[0]
            assert s == pytest.approx(1.0)
    assert LexicalChainScorer(average="mean", engine=engine).score([text], refs=[text], progress=False) == [1.0]


def test_no_noun_and_empty_inputs_give_documented_values(engine, caplog):
    from qe.discourse.scorer import CohesionScorer, DSFocusScorer, DSSentScorer, GraphCoherenceScorer

    outs = ["Run quickly!", "", "The cat sat on the mat."]
    refs = ["The dog barked.", "The dog barked.", "A cat sat."]
    f = DSFocusScorer("nn", engine=engine).score(outs, refs=refs, progress=False)
    assert f[0] == math.inf and math.isnan(f[1]) and 0 < f[2] < math.inf  # no common focus -> worst distance
    assert "without a common focus" in caplog.text
    f_auth = DSFocusScorer("nn", no_common_foci="authors", engine=engine).score(outs, refs=refs, progress=False)
    assert f_auth[0] == 0.0 and f_auth[2] == f[2]  # the authors' choice: eq. 2's empty sum
    f_nan = DSFocusScorer("nn", no_common_foci=math.nan, engine=engine).score(outs, refs=refs, progress=False)
    assert math.isnan(f_nan[0]) and f_nan[2] == f[2]
    assert DSFocusScorer("nn", no_common_foci="nan", engine=engine).no_common_foci != 0.0
    with pytest.raises(ValueError, match="no_common_foci"):
        DSFocusScorer("nn", no_common_foci="zero-ish", engine=engine)
    s = DSSentScorer("nn", engine=engine).score(outs, refs=refs, progress=False)
    assert np.isfinite(s[0]) and math.isnan(s[1])
    rc = CohesionScorer("rc", engine=engine).score(outs, progress=False)
    assert rc[0] == 0.0 and math.isnan(rc[1])
    eg = GraphCoherenceScorer(engine=engine).score(outs, progress=False)
    assert eg[0] == 0.0 and math.isnan(eg[1])


def test_ds_focus_unrelated_hypothesis_never_scores_better_than_a_related_one(engine):
    """Issue 14 point 7: under the default, a hypothesis sharing no focus with the reference is never better
    (DS-Focus is a distance: lower = better) than any hypothesis sharing one; the authors' 0.0 inverts that."""
    from qe.discourse.scorer import DiscoScoreScorer, DSFocusScorer

    ref = "The cat saw the dog. The cat ran."
    related = ["The cat sat on the mat.", "A dog barked at the bird and the cat.", "The dog ran. The dog sat.",
               "The cat and the dog and the cat and the dog sat on the mat. The cat ran. The dog barked."]
    unrelated = ["A bird sang.", "The mat was happy. It is a very long text with many words.", "Run quickly!"]
    outs = related + unrelated
    for focus in ("nn",):  # entity foci group lemmas per pair, so "related" is a noun-level notion here
        for average in ("precision", "f", "recall"):
            s = DSFocusScorer(focus, average=average, engine=engine).score(outs, refs=[ref] * len(outs),
                                                                          progress=False)
            rel, unr = s[: len(related)], s[len(related):]
            assert all(np.isfinite(rel)), (focus, average, rel)
            assert min(unr) > max(rel), (focus, average, s)  # never better, and strictly worse
    s = DiscoScoreScorer(engine=engine).score(outs, refs=[ref] * len(outs), progress=False)
    assert min(s[len(related):]) > max(s[: len(related)])
    # the authors' choice gives the unrelated texts the best possible distance, 0.0
    a = DSFocusScorer("nn", no_common_foci="authors", engine=engine).score(outs, refs=[ref] * len(outs),
                                                                          progress=False)
    assert max(a[len(related):]) == 0.0 < min(a[: len(related)])


def test_scores_in_input_order_and_multi_reference(engine):
    from qe.discourse.scorer import DSFocusScorer

    sc = DSFocusScorer("nn", engine=engine)
    a = "The cat sat on the mat. The cat was happy."
    b = "A very long text with many words and the dog barked at the bird and the cat sat on the mat."
    ref = "The cat saw the dog."
    one = [sc.score([x], refs=[ref], progress=False)[0] for x in (a, b)]
    assert sc.score([b, a], refs=[ref, ref], progress=False) == pytest.approx(one[::-1])
    r2 = "The cat sat."
    both = sc.score([a], refs=[[ref, r2]], progress=False)[0]
    single = [sc.score([a], refs=[r], progress=False)[0] for r in (ref, r2)]
    assert both == pytest.approx(np.mean(single))
    best = DSFocusScorer("nn", multi_ref="best", engine=engine).score([a], refs=[[ref, r2]], progress=False)[0]
    assert best == pytest.approx(min(single))  # a distance: best = smallest


def test_registered_names_and_components(engine):
    import qe

    names = qe.available_scorers()
    for n in ("ds-focus-nn", "ds-focus-entity", "ds-focus-f-nn", "ds-sent-u-nn", "ds-sent-u-entity",
              "ds-sent-w-nn", "ds-sent-w-entity", "discoscore", "rc", "lc", "entity-graph", "lexical-graph",
              "lexical-chain"):
        assert n in names
    sc = qe.load("ds-sent-w-entity", engine=engine)
    assert sc.name == "DS-Sent-w (Entity)" and "thr:0.8" in sc.signature and "adj:w" in sc.signature
    with pytest.raises(ValueError, match="references"):
        sc.score(["a cat"], progress=False)
    comp = qe.load("discoscore", engine=engine).score_components(["The cat sat."], refs=["A cat sat."],
                                                                 progress=False)
    assert set(comp) == {"DS-Focus (NN)", "DS-Focus (Entity)", "DS-Focus* (NN)", "DS-Focus* (Entity)",
                         "DS-Sent-u (NN)", "DS-Sent-u (Entity)", "DS-Sent-w (NN)", "DS-Sent-w (Entity)"}
    assert qe.load("rc", engine=engine).score_components(["The cat saw the cat."], progress=False) == \
        {"RC": [2.0], "LC": [1.0]}


def test_spacy_foci_lemmas_and_sentences(engine):
    p = engine.parse(["The cars were parked near Berlin. A car hit the cars."])[0]
    assert p.nouns == {"car": [1, 8, 11], "berlin": [5]}
    assert [p.words[i].sent for i in p.nouns["car"]] == [0, 1, 1]
    assert len(p.sentences) == 2


@needs_data
def test_ner18_converter():
    from qe.data import load_dataset
    from qe.core.paths import resolve_data_dir

    if not (resolve_data_dir(None) / "newsroom" / "ner18.jsonl").is_file():
        pytest.skip("newsroom/ner18.jsonl absent")
    recs = load_dataset("ner18")
    assert len(recs) == 420 and len({r.system for r in recs}) == 7 and len({r.extra["group"] for r in recs}) == 60
    r = recs[0]
    assert r.source and len(r.refs) == 1 and set(r.ratings) == {"coherence", "fluency", "informativeness",
                                                                  "relevance"}


def test_ds_sent_scorer_adjacency_and_section5_features(engine):
    from qe.discourse.features import discourse_features, feature_discriminativeness
    from qe.discourse.scorer import DSSentScorer

    text = "The cat and the dog ran. The cat and the dog sat. A bird sang."
    p = engine.parse([text])[0]
    A_u = DSSentScorer("nn", weighted=False, engine=engine).adjacency(p)
    A_w = DSSentScorer("nn", weighted=True, engine=engine).adjacency(p)
    assert A_u[0, 1] == 1.0 and A_w[0, 1] == 2.0 and A_u[:, 2].sum() == 0  # two shared foci, bird unshared
    feats = discourse_features([text, "", "Run!"], engine)
    assert feats["FREQ (NN)"][0] == 2.0 and feats["Conn-w (NN)"][0] == pytest.approx(2 / 9)
    assert math.isnan(feats["FREQ (NN)"][1]) and feats["FREQ (NN)"][2] == 0.0 and feats["Conn-u (NN)"][2] == 0.0
    d = feature_discriminativeness([text, "A bird sang."], ["A bird sang.", "A bird sang."], engine)
    assert d["FREQ (NN)"]["n"] == 1 and d["FREQ (NN)"]["D"] == 1.0  # identical pair excluded


def test_entity_matching_joint_vs_exact(engine, tmp_path):
    from qe.discourse.engine import DiscourseEngine
    from qe.discourse.scorer import DSFocusScorer

    p = tmp_path / "v.txt"
    p.write_text("car 1 0\nvehicle 0.95 0.3\ntree 0 1\n")
    eng = DiscourseEngine(model=engine.model, device="cpu", vectors=str(p))
    hyp, ref = "The car stopped. The vehicle left.", "The car stopped near a tree."
    exact = DSFocusScorer("entity", engine=eng, no_common_foci=math.nan).score([hyp], refs=[ref], progress=False)
    joint = DSFocusScorer("entity", engine=eng, entity_matching="joint").score([hyp], refs=[ref], progress=False)
    assert math.isnan(exact[0])  # {car, vehicle} in the hypothesis vs {car} in the reference: no exact match
    assert joint[0] > 0  # one joint entity {car, vehicle} shared by both texts


def test_discoscore_separate_sentence_encoder(tiny_bert):
    import qe

    ds = qe.load("discoscore", model=tiny_bert, sent_model=tiny_bert, device="cpu")
    assert ds.sent_engine is not ds.engine and f"sent_enc:{tiny_bert}" in ds.signature
    assert all(v.engine is ds.sent_engine for v in ds.variants[4:])
    assert ds.score(["The cat sat."], refs=["The cat sat."], progress=False) == [0.0]


def test_batching_and_padding_do_not_change_embeddings(tiny_bert):
    from qe.core.encoder import ContextualEncoder

    enc = ContextualEncoder(tiny_bert, device="cpu", max_tokens=64)
    texts = ["the cat sat .", " ".join(["a dog barked at the bird ."] * 6), "it is"]
    one = enc.encode(texts, batch_size=1)
    many = enc.encode(texts)
    for a, b in zip(one, many):
        np.testing.assert_allclose(a.vectors, b.vectors, atol=1e-5)
        assert (a.offsets == b.offsets).all()


def test_ner18_correlation_protocols_on_synthetic_records():
    from qe.data.record import Record
    from experiments.discoscore import summary_level, system_level

    recs, scores = [], []
    for doc in range(3):
        for k, sy in enumerate(["a", "b", "c", "d"]):
            rating = k + 0.1 * doc
            recs.append(Record(id=f"{doc}-{sy}", output="x", system=sy, ratings={"coherence": rating},
                               extra={"group": str(doc)}))
            scores.append(10 * k if doc != 2 else -k)  # document 2 ranks the systems the other way round
    s = np.asarray(scores, dtype=float)
    assert system_level(recs, s, "coherence") == pytest.approx(1.0)  # system means still in rating order
    tau, n_docs = summary_level(recs, s, "coherence")
    assert n_docs == 3 and tau == pytest.approx((1 + 1 - 1) / 3)
    s[0] = math.nan  # NaN scores are left out of means and per-document rankings
    assert system_level(recs, s, "coherence") == pytest.approx(1.0)
