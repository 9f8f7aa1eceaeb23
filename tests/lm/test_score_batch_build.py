"""The LM scorer's padded batches (built with array operations) and its unigram sums."""
from types import SimpleNamespace

import numpy as np
import torch

from qe.lm.scorer import LMScorer


def test_padded_rows_are_bos_tokens_and_tokens_eos():
    fake = SimpleNamespace(tokenizer=SimpleNamespace(pad_id=0, bos_id=2, eos_id=3))
    ids = [[7, 8, 9], [5], [11, 12]]
    inp, tgt = LMScorer._padded(fake, ids, [2, 0, 1])  # any order of rows
    assert inp.dtype == torch.long and inp.shape == (3, 4)
    assert inp.tolist() == [[2, 11, 12, 0], [2, 7, 8, 9], [2, 5, 0, 0]]
    assert tgt.tolist() == [[11, 12, 3, 0], [7, 8, 9, 3], [5, 3, 0, 0]]


def test_unigram_sums_match_per_output_sums(tmp_path):
    from qe.core.tokenization import SPECIALS, WordTokenizer
    from qe.lm import format as lm_format
    from qe.lm.model import LSTMLM

    import qe

    itos = list(SPECIALS) + [f"w{i}" for i in range(20)]
    cfg = dict(vocab_size=len(itos), embedding_dim=8, hidden_size=8, num_layers=1, dropout=0.0, tie_weights=True,
               pad_id=0)
    uni = np.random.default_rng(0).normal(-5, 1, len(itos))
    export = lm_format.save(tmp_path / "lm", LSTMLM(**cfg), WordTokenizer(itos), uni, cfg)
    sc = qe.load(export, device="cpu")
    outs = ["w1 w2 w3", "", "w4", "w5 w5"]
    comp = sc.score_components(outs, progress=False)
    ids = sc.tokenizer.encode_batch(outs)
    want = [float(sc.unigram[x].sum()) if x else 0.0 for x in ids]
    assert np.allclose(comp["unigram_logprob"], want, atol=1e-12)
    assert comp["length"] == [3.0, 0.0, 1.0, 2.0] and np.isnan(comp["slor"][1])
