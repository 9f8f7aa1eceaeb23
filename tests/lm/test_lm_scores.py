"""SLOR / NCE / PPL: the scorer against hand computation, input handling, determinism, export checks."""
import json
import math

import numpy as np
import pytest
import torch

import qe
from qe.errors import ExportError
from qe.lm.model import LSTMLM
from qe.lm import format as lm_format
from qe.lm.format import unigram_logprobs
from qe.core.tokenization import SPECIALS, WordTokenizer


def _constant_lm(tmp_path, probs: dict[str, float]):
    """An LSTM LM whose next-token distribution ignores the context: zero weights, decoder bias = log p.

    Vocabulary: <pad> <unk> <s> </s> a b. Training corpus for the unigram table: "a a b" and "a" (a:3, b:1).
    """
    tok = WordTokenizer(list(SPECIALS) + ["a", "b"], lowercase=True)
    model = LSTMLM(vocab_size=6, embedding_dim=4, hidden_size=4, num_layers=1, dropout=0.0, tie_weights=False)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        bias = torch.full((6,), -1e4)
        for t, p in probs.items():
            bias[tok.stoi[t]] = math.log(p)
        model.decoder.bias.copy_(bias)
    ids = [np.array([4, 4, 5]), np.array([4])]
    logp, _ = unigram_logprobs(ids, 6, (0, 2, 3))
    cfg = dict(vocab_size=6, embedding_dim=4, hidden_size=4, num_layers=1, dropout=0.0, tie_weights=False, pad_id=0)
    return lm_format.save(tmp_path / "lm", model, tok, logp, cfg)


def test_hand_computed_slor_nce_ppl(tmp_path):
    export = _constant_lm(tmp_path, {"a": 0.5, "b": 0.25, "</s>": 0.25})
    sc = qe.load(export)
    # "a b": ln pM = ln .5 + ln .25 (tokens) + ln .25 (</s>); unigram add-one: N=4 tokens, V'={<unk>,a,b} -> 7
    # p_u(a) = (3+1)/7, p_u(b) = (1+1)/7; |S| = 2
    lpm = math.log(0.5) + math.log(0.25) + math.log(0.25)
    lpu = math.log(4 / 7) + math.log(2 / 7)
    comps = sc.score_components(["a b", "b"], progress=False)
    assert comps["length"] == [2.0, 1.0]
    assert comps["logprob"][0] == pytest.approx(lpm, abs=1e-5)
    assert comps["unigram_logprob"][0] == pytest.approx(lpu, abs=1e-5)
    assert comps["slor"][0] == pytest.approx((lpm - lpu) / 2, abs=1e-5)
    assert comps["nce"][0] == pytest.approx(lpm / 2, abs=1e-5)
    assert comps["ppl"][0] == pytest.approx(math.exp(-lpm / 2), rel=1e-5)
    # "b": ln pM = ln .25 + ln .25, p_u(b) = 2/7
    assert comps["slor"][1] == pytest.approx(2 * math.log(0.25) - math.log(2 / 7), abs=1e-5)
    assert qe.load(export, score="nce").score(["a b"], progress=False)[0] == pytest.approx(lpm / 2, abs=1e-5)
    assert qe.load(export, score="ppl").score(["a b"], progress=False)[0] == pytest.approx(math.exp(-lpm / 2), rel=1e-5)
    assert sc.name == "WordSLOR" and "export:" in sc.signature


def test_unknown_words_use_unk(tmp_path):
    export = _constant_lm(tmp_path, {"a": 0.5, "<unk>": 0.25, "</s>": 0.25})
    comps = qe.load(export).score_components(["a zebra"], progress=False)
    lpm = math.log(0.5) + math.log(0.25) + math.log(0.25)
    lpu = math.log(4 / 7) + math.log(1 / 7)  # <unk> never seen in the unigram corpus: (0+1)/7
    assert comps["slor"][0] == pytest.approx((lpm - lpu) / 2, abs=1e-5)


@pytest.fixture
def random_export(tmp_path, tiny_corpus):
    tok = WordTokenizer.train(tiny_corpus, max_size=100)
    torch.manual_seed(0)
    cfg = dict(vocab_size=tok.vocab_size, embedding_dim=16, hidden_size=16, num_layers=2, dropout=0.0,
               tie_weights=True, pad_id=0)
    model = LSTMLM(**cfg)
    ids = [np.array(tok.encode(s)) for s in tiny_corpus]
    logp, _ = unigram_logprobs(ids, tok.vocab_size)
    return lm_format.save(tmp_path / "rnd", model, tok, logp, cfg), model, tok


def test_batched_equals_one_by_one_and_naive_loop(random_export):
    export, model, tok = random_export
    sents = ["the cat sat .", "a dog", "the hotel has free internet and allows dogs near the river ."]
    sc = qe.load(export, score="logprob")
    batched = sc.score(sents, progress=False)
    single = [sc.score([s], progress=False)[0] for s in sents]
    assert batched == pytest.approx(single, abs=1e-6)
    # naive: one forward per prefix, no chunking, no batching
    model.eval()
    for s, got in zip(sents, batched):
        ids = tok.encode(s)
        inp = [tok.bos_id] + ids
        tgt = ids + [tok.eos_id]
        total = 0.0
        for t in range(len(tgt)):
            logits, _ = model(torch.tensor([inp[: t + 1]]))
            total += torch.log_softmax(logits[0, -1], -1)[tgt[t]].item()
        assert got == pytest.approx(total, abs=1e-4)


def test_input_handling(random_export):
    export, _, _ = random_export
    sc = qe.load(export)
    s = sc.score(["the cat sat .", "", "   \t", "the dog"], progress=False)
    assert not math.isnan(s[0]) and not math.isnan(s[3])
    assert math.isnan(s[1]) and math.isnan(s[2])  # documented: empty / whitespace-only -> NaN
    assert sc.score([], progress=False) == []
    with pytest.raises(TypeError, match=r"outputs\[1\]: expected str, got int"):
        sc.score(["ok", 3], progress=False)
    with pytest.raises(TypeError, match="single str"):
        sc.score("a sentence", progress=False)
    # very long input: scored whole through time chunks, same as with a large chunk budget
    long = " ".join(["the cat sat on the mat ."] * 400)  # 2,800 tokens
    small = qe.load(export, score="logprob", logits_budget=50 * 64, max_tokens=64)
    big = qe.load(export, score="logprob")
    a, b = small.score([long], progress=False)[0], big.score([long], progress=False)[0]
    assert math.isfinite(a) and a == pytest.approx(b, rel=1e-5)


def test_scores_in_input_order_and_deterministic(random_export):
    export, _, _ = random_export
    sc = qe.load(export)
    sents = ["a dog", "the hotel has free internet .", "cat", "the food is cheap and the hotel is near ."]
    first = sc.score(sents, progress=False)
    again = sc.score(sents, progress=False)
    assert first == again
    rev = sc.score(sents[::-1], progress=False)
    assert rev[::-1] == pytest.approx(first, abs=1e-9)


def test_export_kind_and_version_checks(random_export, tmp_path):
    export, _, _ = random_export
    mf = export / "qe_export.json"
    data = json.loads(mf.read_text())
    from qe.lm.scorer import LMScorer

    data["format_version"] = 99
    mf.write_text(json.dumps(data))
    with pytest.raises(ExportError, match=r"format_version 99 found, 1 expected"):
        qe.load(export)
    data["format_version"] = 1
    data["kind"] = "ratpred"
    mf.write_text(json.dumps(data))
    with pytest.raises(ExportError, match=r"kind 'ratpred' found, 'slor' expected"):
        LMScorer(export)
    with pytest.raises(ExportError, match="no qe_export.json"):
        qe.load(tmp_path)
    with pytest.raises(KeyError, match="neither an export directory nor a registered scorer"):
        qe.load("no-such-scorer")


def test_tampered_weights_are_detected(random_export):
    export, _, _ = random_export
    with open(export / "unigram.safetensors", "ab") as f:
        f.write(b"\0")
    # the checksum disagreement (tampering) is said first, though the header check is what trips: a file changed
    # after export is "changed", and only then "not a valid safetensors file" (issue 36 item 14's header check)
    with pytest.raises(ExportError, match=r"changed: unigram\.safetensors\).*unigram\.safetensors: not a valid "
                                          r"safetensors file"):
        qe.load(export)


def test_scorer_imports_no_training_stack():
    """Loading an LM export must not import Lightning, Hydra, omegaconf or the training code (issue 14)."""
    import subprocess
    import sys

    code = ("import sys, qe.lm.scorer, qe.lm.format, qe.core.tokenization; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('lightning', 'pytorch_lightning', 'hydra', 'omegaconf', 'torchmetrics', 'transformers', 'spacy') "
            "or m in ('qe.training', 'qe.lm.task', 'qe.lm.data')); print(','.join(bad))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "", f"qe.lm.scorer imports: {r.stdout.strip()}"


def test_manifest_model_arguments_read_from_either_place(random_export):
    """Format version 1: the LSTMLM arguments in ``config.model`` (also with extra Hydra keys) or at the top level."""
    export, _, _ = random_export
    mf = export / "qe_export.json"
    data = json.loads(mf.read_text())
    want = qe.load(export, score="logprob").score(["the cat sat ."], progress=False)
    kwargs = data["config"]["model"]
    data["config"]["model"] = {"_target_": "qe.lm.task.LanguageModelModule", "_partial_": True, "lr": 0.003, **kwargs}
    mf.write_text(json.dumps(data))
    assert qe.load(export, score="logprob").score(["the cat sat ."], progress=False) == want
    data["config"] = {"train": {}}
    data["model"] = kwargs
    mf.write_text(json.dumps(data))
    assert qe.load(export, score="logprob").score(["the cat sat ."], progress=False) == want
    del data["model"]
    mf.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="no model vocab_size"):
        qe.load(export)


def _naive_logprob(model, tok, text):
    """ln p_M(S) from one unchunked forward pass over the whole sentence (full distribution, no gather tricks)."""
    ids = tok.encode(text)
    inp = torch.tensor([[tok.bos_id] + ids])
    tgt = torch.tensor([ids + [tok.eos_id]])
    with torch.no_grad():
        out, _ = model.eval()(inp)
        lp = torch.log_softmax(out.double(), -1).gather(-1, tgt.unsqueeze(-1))
    return lp.sum().item()


def test_long_input_bounded_chunks_one_thread_and_exact(random_export):
    """Issue 17: a very long line runs through the LSTM and the output layer in bounded chunks of time steps (the
    state carried over: the score is the unchunked one), a linear number of them, the recurrence of a one-row batch
    on one intra-op thread (restored afterwards)."""
    export, model, tok = random_export
    long = " ".join(["the cat sat on the mat .", "a dog and the hotel near the river ."] * 150)  # 2,550 tokens
    T = len(tok.encode(long)) + 1
    sc = qe.load(export, score="logprob", logits_budget=64 * tok.vocab_size)
    lstm_steps, out_steps, threads = [], [], []

    def on_lstm(module, args, out):
        lstm_steps.append(args[0].shape[1])
        threads.append(torch.get_num_threads())

    def on_decoder(module, args, out):
        out_steps.append(args[0].shape[1])

    sc.model.lstm.register_forward_hook(on_lstm)
    sc.model.decoder.register_forward_hook(on_decoder)
    before = torch.get_num_threads()
    got = sc.score([long], progress=False)[0]
    assert sc.last_chunk == 64
    assert max(lstm_steps) == max(out_steps) == 64 and sum(lstm_steps) == sum(out_steps) == T
    assert len(lstm_steps) == math.ceil(T / 64)  # linear in the length
    assert set(threads) == {1} and torch.get_num_threads() == before
    assert got == pytest.approx(_naive_logprob(model, tok, long), rel=1e-6)
    # the chunk never exceeds the logits budget nor MAX_SCORE_CHUNK, whatever the batch
    from qe.lm.model import MAX_SCORE_CHUNK

    big = qe.load(export, score="logprob")
    assert big.chunk_steps(1, 10**6) == MAX_SCORE_CHUNK
    assert big.chunk_steps(4, 10**6) * 4 * tok.vocab_size <= big.logits_budget
    assert big.score([long], progress=False)[0] == pytest.approx(got, rel=1e-6)


def _adaptive_model(vocab_size, seed=0):
    torch.manual_seed(seed)
    cfg = dict(vocab_size=vocab_size, embedding_dim=16, hidden_size=16, num_layers=2, dropout=0.0,
               tie_weights=False, pad_id=0, output_layer="adaptive", adaptive_cutoffs=[6, 20], adaptive_div_value=2.0)
    return LSTMLM(**cfg), cfg


def test_adaptive_softmax_is_normalised_and_exact():
    from qe.lm.model import effective_cutoffs

    model, _ = _adaptive_model(40)
    counts = torch.rand(40, generator=torch.Generator().manual_seed(1))
    model.set_output_order(counts)
    top = int(torch.argmax(counts))
    assert int(model.output_rank[top]) == 0 and sorted(model.output_rank.tolist()) == list(range(40))
    assert model.output_rank.tolist() != list(range(40))  # a real permutation: the mapping is exercised
    model.eval()
    inp = torch.randint(1, 40, (3, 9))
    tgt = torch.randint(1, 40, (3, 9))
    tgt[1, 6:] = 0
    with torch.no_grad():
        h, _ = model.hidden(inp)
        lp = model.log_probs(h)
        assert torch.allclose(lp.double().exp().sum(-1), torch.ones(3, 9, dtype=torch.float64), atol=1e-5)
        want = lp.gather(-1, tgt.unsqueeze(-1)).squeeze(-1).masked_fill(tgt == 0, 0.0)
        assert torch.allclose(model.target_logprobs(h, tgt), want, atol=1e-5)
        assert torch.allclose(model.sequence_logprobs(inp, tgt, chunk=4), want.double().sum(1), atol=1e-4)
    assert effective_cutoffs([2000, 6000], 628) == [157] and effective_cutoffs([50, 200], 628) == [50, 200]
    with pytest.raises(ValueError, match="tie_weights=false"):
        LSTMLM(40, 16, 16, output_layer="adaptive")


def test_adaptive_export_load_identical_scores(tmp_path, tiny_corpus):
    tok = WordTokenizer.train(tiny_corpus, max_size=100)
    model, cfg = _adaptive_model(tok.vocab_size)
    ids = [np.array(tok.encode(s)) for s in tiny_corpus]
    counts = np.bincount(np.concatenate(ids), minlength=tok.vocab_size)[::-1].copy()  # reversed: not the id order
    model.set_output_order(counts)
    logp, _ = unigram_logprobs(ids, tok.vocab_size)
    export = lm_format.save(tmp_path / "adaptive", model, tok, logp, cfg)
    manifest = qe.core.export.read_manifest(export)
    assert manifest["config"]["model"]["output_layer"] == "adaptive"
    assert manifest["config"]["model"]["adaptive_cutoffs"] == [6, 20]
    sc = qe.load(export, score="logprob")
    assert sc.model.output_layer == "adaptive" and torch.equal(sc.model.output_rank, model.output_rank)
    sents = ["the cat sat .", "a dog near the river and the hotel", "zebra"]
    got = sc.score(sents, progress=False)
    for s, g in zip(sents, got):
        assert g == pytest.approx(_naive_logprob(model, tok, s), abs=1e-4)
