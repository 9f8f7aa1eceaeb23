import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path | None:
    from qe.paths import resolve_data_dir

    d = resolve_data_dir(None)
    return d if (d / "emnlp17").is_dir() else None


needs_data = pytest.mark.skipif(shared_data_dir() is None,
                                reason="public data folder (../shared/data or $QE_DATA_DIR) is absent")


@pytest.fixture
def tiny_corpus() -> list[str]:
    return [
        "the cat sat on the mat .",
        "the dog sat on the log .",
        "a cat and a dog are friends .",
        "the restaurant serves cheap food in the centre .",
        "the hotel has free internet and allows dogs .",
        "a dog is not a cat .",
        "we ate italian food near the river .",
        "the food is cheap and the hotel is near .",
    ] * 4


def make_lm_export(dest: Path, corpus: list[str], size: int = 8, layers: int = 1, seed: int = 0):
    """A word-LM export with random weights over ``corpus`` (offline, instant): returns (export dir, model, tokenizer)."""
    import numpy as np
    import torch

    from qe.lm.format import save, unigram_logprobs
    from qe.lm.model import LSTMLM
    from qe.tokenization import WordTokenizer

    tok = WordTokenizer.train(corpus, max_size=100)
    torch.manual_seed(seed)
    cfg = dict(vocab_size=tok.vocab_size, embedding_dim=size, hidden_size=size, num_layers=layers, dropout=0.0,
               tie_weights=True, pad_id=0)
    model = LSTMLM(**cfg)
    logp, _ = unigram_logprobs([np.array(tok.encode(s)) for s in corpus], tok.vocab_size)
    return save(dest, model, tok, logp, cfg), model, tok


@pytest.fixture
def tiny_lm_export(tmp_path, tiny_corpus) -> Path:
    """Export directory of a tiny random word LM over ``tiny_corpus``."""
    return make_lm_export(tmp_path / "lm", tiny_corpus)[0]
