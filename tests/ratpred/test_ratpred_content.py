"""Content-aware RatPred (model.content_features): the content vector of hand-written pairs, the stand-in rule for
placeholders left in synthetic outputs, training -> export -> qe.load with the same vectors on both paths."""
import json
import math

import numpy as np
import pytest
import torch

import qe
from tiny_ratpred import _compose_ratpred, _records
from qe.content import Matcher
from qe.ratpred.content_features import (CONTENT_DIM, FEATURE_NAMES, LEXICON_FILE, ContentFeatures, content_vector,
                                         stand_ins)
from qe.ratpred.data import SETUPS, Instance, build_training_set, cv_fold, make_parts

MR = "inform(name='the eagle',food=thai,pricerange=cheap)"


@pytest.mark.parametrize("mr, output, want", [
    # everything said
    (MR, "The Eagle serves cheap Thai food.", [1, 0, 0, 0, 0, 0, math.log(4)]),
    # two values missing, and a placeholder a synthetic error left for a slot the MR does not hold (a stand-in)
    (MR, "the eagle serves food near X-near .", [1 / 3, 2 / 3, 0, 0, 1, 0, math.log(4)]),
    # a don't-care value is unchecked; a category value said twice in the same words is repeated
    ("inform(name='the eagle',food=thai,area=dontcare)", "the eagle serves thai food , thai food .",
     [2 / 3, 0, 0, 1 / 3, 0, 1, math.log(4)]),
])
def test_content_vector_of_hand_written_pairs(mr, output, want):
    v = content_vector(Matcher(), mr, output)
    assert v.dtype == np.float32 and v.shape == (CONTENT_DIM,) == (len(FEATURE_NAMES),)
    assert v.tolist() == pytest.approx(want, abs=1e-6)


def test_stand_ins_are_only_delexicaliser_placeholders():
    assert stand_ins("a X-near b X-e3 c") == ("a b c", 2)
    assert stand_ins("an X-ray of x-near") == ("an X-ray of x-near", 0)  # not placeholders the delexicaliser writes
    assert content_vector(Matcher(), "inform()", "hello").tolist() == [0, 0, 0, 0, 0, 0, 0]  # no fact: no fraction


def test_features_cached_per_pair():
    cf = ContentFeatures()
    a = cf([MR, MR], ["the eagle", "the eagle"])
    assert a[0] is a[1] and len(cf._cache) == 1
    assert not ContentFeatures(cache=False)._cache


def _fold():
    recs = _records()
    tr, dv, te = cv_fold(make_parts(recs, 5, seed=3), 0)
    orig, extra, _ = build_training_set(tr, te, SETUPS["S3"], max_errors=2, seed=1)
    dev = [Instance(r.mr, r.output, r.ratings["quality"], "real", 0, r.id) for r in dv]
    return orig, extra, dev, dv


def test_tiny_training_with_content_features_exports_and_scores(tmp_path):
    """The network reads the vector at its first tanh layer; the export records the features and its lexicon; the
    scorer computes the training vectors (same function) and reproduces the module's predictions."""
    from qe.ratpred.task import RatPredModule, predict, train_one

    orig, extra, dev, dv = _fold()
    model_cfg = dict(embedding_dim=8, hidden_size=8, tanh_layers=2, dropout=0.5, lr=1e-2, batch_size=8,
                     round_to=0.5, clip=True, content_features=True, content_lexicon="none")
    module, vocab, info = train_one(orig, extra, dev, model_cfg, {"passes_synth": 1, "passes_orig": 2}, seed=3)
    assert module.net.tanh[0].in_features == 16 + CONTENT_DIM
    assert RatPredModule(10, 4, 4).net.tanh[0].in_features == 8  # default: the paper's network
    p = predict(module, vocab, dev, rounded=False)
    exp = module.export(tmp_path / "exp", vocab=vocab, config={"delex": True, "setup": "S3"})
    man = json.loads((exp / "qe_export.json").read_text())
    entry = man["config"]["content_features"]
    assert man["config"]["model"]["content_dim"] == CONTENT_DIM and entry["features"] == list(FEATURE_NAMES)
    assert entry["lexicon"] == "none" and entry["lexicon_file"] is None and not (exp / LEXICON_FILE).exists()
    scorer = qe.load(exp, rounded=False)
    outs, mrs = [r.output for r in dv], [r.mr for r in dv]
    # the two paths give identical vectors: training's cache and the scorer's own computation
    train_vecs = module.content_vectors()(mrs, outs)
    score_vecs = scorer.content(mrs, outs)
    assert all(torch.equal(a, b) for a, b in zip(train_vecs, score_vecs))
    # the synthetic outputs the features were trained on are lexical (relexicalised), placeholders only as stand-ins
    synth = [i for i in extra if i.origin.startswith("synth")]
    assert synth and all("X-name" not in i.output and "X-food" not in i.output for i in synth)
    s = scorer.score(outs, mrs=mrs, progress=False)
    assert np.allclose(s, p, atol=1e-5)
    assert np.allclose(qe.load(exp, rounded=False, max_tokens=30).score(outs[::-1], mrs=mrs[::-1], progress=False),
                       s[::-1], atol=1e-5)
    # the features matter: the same network without them (zeros) scores differently
    net_in = scorer.content
    scorer.content = lambda m, o, w=None: [torch.zeros(CONTENT_DIM) for _ in m]
    assert not np.allclose(scorer.score(outs, mrs=mrs, progress=False), s)
    scorer.content = net_in
    # an export whose manifest lost the entry is refused
    from qe.ratpred.scorer import RatPredScorer

    man["config"].pop("content_features")
    with pytest.raises(ValueError, match="content_features"):
        RatPredScorer(exp, manifest=man)


def test_export_with_a_lexicon_carries_it(tmp_path):
    """A lexicon-backed matcher: the lexicon file goes into the export (checksummed in the manifest) and a tampered
    lexicon is refused."""
    from qe.content.lexicon import mine
    from qe.ratpred.model import Vocab
    from qe.ratpred.module import RatPredModule

    lex = mine([(MR, "the eagle is a cheap thai place")] * 3 + [("inform(pricerange=expensive)", "it is pricey")] * 3,
               source="test", min_count=2)
    module = RatPredModule(4, 4, 4, content_features=True)
    ContentFeatures._SHARED[("tiny", None)] = ContentFeatures(lex, "tiny")
    try:
        module.hparams.content_lexicon = "tiny"
        exp = module.export(tmp_path / "exp", vocab=Vocab(["a", "b"]))
    finally:
        ContentFeatures._SHARED.pop(("tiny", None))
    man = json.loads((exp / "qe_export.json").read_text())
    assert man["config"]["content_features"]["lexicon_sha"] == lex.checksum and (exp / LEXICON_FILE).is_file()
    s = qe.load(exp)
    assert s.content.lexicon.checksum == lex.checksum
    assert len(s.score(["the eagle is cheap"], mrs=[MR], progress=False)) == 1
    d = json.loads((exp / LEXICON_FILE).read_text())
    d["slots"]["area"] = {"kind": "category", "values": {"north": "north"}, "patterns": {}}
    (exp / LEXICON_FILE).write_text(json.dumps(d))
    from qe.ratpred.scorer import RatPredScorer

    with pytest.raises(ValueError, match="not the lexicon the model was trained with"):
        RatPredScorer(exp, verify=False)  # the export's file checksums aside, the manifest's lexicon checksum


def test_runner_with_content_features_exports_needing_them(tmp_path):
    """train.py ... model.content_features=true end to end: the exported model's manifest says it needs content
    features, and qe.load scores with them."""
    from qe.training import run_training

    cfg = _compose_ratpred(tmp_path, "protocol.passes_orig=1", "logger=none", "model.content_features=true",
                           "model.content_lexicon=none")
    run_training(cfg)
    man = json.loads((tmp_path / "export" / "qe_export.json").read_text())
    assert man["config"]["content_features"]["features"] == list(FEATURE_NAMES)
    s = qe.load(str(tmp_path / "export"))
    assert s.content is not None
    assert len(s.score(["place 1 serves thai food"], mrs=["inform(name='place 1',food=thai)"], progress=False)) == 1


def test_tiny_training_with_content_head_exports_and_scores_without_matcher(tmp_path):
    """model.content_head: the auxiliary head is trained (its loss moves its weights), the export holds it but no
    matcher entry, and the scorer reproduces the module's predictions without computing content features."""
    from qe.ratpred.content_features import HEAD_TARGETS
    from qe.ratpred.task import predict, train_one

    orig, extra, dev, dv = _fold()
    model_cfg = dict(embedding_dim=8, hidden_size=8, tanh_layers=2, dropout=0.5, lr=1e-2, batch_size=8,
                     round_to=0.5, clip=True, content_head=True, content_loss_weight=0.3, content_lexicon="none")
    torch.manual_seed(0)
    module, vocab, info = train_one(orig, extra, dev, model_cfg, {"passes_synth": 1, "passes_orig": 2}, seed=3)
    net = module.net
    assert net.content_out.out_features == len(HEAD_TARGETS) and net.tanh[0].in_features == 16
    from qe.ratpred.module import RatPredModule

    fresh = RatPredModule(len(vocab), 8, 8, content_head=True)
    assert not torch.allclose(fresh.net.content_out.weight, net.content_out.weight)  # trained, not left at init
    p = predict(module, vocab, dev, rounded=False)
    exp = module.export(tmp_path / "exp", vocab=vocab, config={"delex": True, "setup": "S3"})
    man = json.loads((exp / "qe_export.json").read_text())
    assert man["config"]["model"]["content_head_dim"] == len(HEAD_TARGETS) and "content_features" not in man["config"]
    scorer = qe.load(exp, rounded=False)
    assert scorer.content is None
    s = scorer.score([r.output for r in dv], mrs=[r.mr for r in dv], progress=False)
    assert np.allclose(s, p, atol=1e-5)


def test_content_head_loss_is_weighted():
    """The training loss is rating MSE + content_loss_weight x the head's MSE against the matcher's vector."""
    from qe.ratpred.model import Vocab, collate
    from qe.ratpred.module import RatPredModule

    torch.manual_seed(0)
    vocab = Vocab(["the", "eagle"])
    cf = ContentFeatures()
    items = [(vocab.encode(["the", "eagle"]), vocab.encode(["the"]), 4.0, cf([MR], ["the eagle"])[0]),
             (vocab.encode(["eagle"]), vocab.encode(["eagle", "the"]), 2.0, cf([MR], ["cheap thai"])[0])]
    batch = collate(items)
    losses = {}
    for w in (0.0, 0.5):
        torch.manual_seed(0)
        m = RatPredModule(len(vocab), 4, 4, dropout=0.0, content_head=True, content_loss_weight=w)
        m.log = lambda *a, **k: None
        losses[w] = float(m.training_step(batch, 0).detach())
        pred, aux = m(batch).float(), m.net.aux.float()
    rating = float(torch.nn.functional.mse_loss(pred, batch["y"]))
    head = float(torch.nn.functional.mse_loss(aux, batch["content"][:, :6]))
    assert losses[0.0] == pytest.approx(rating, rel=1e-5)
    assert losses[0.5] == pytest.approx(rating + 0.5 * head, rel=1e-5)
