"""The RatPred network (paper Section 2, Figure 1), its input encoding and its prediction rule.

Two GRU encoders (MR tokens, output tokens), each with its own embedding table; dropout on the encoder
inputs; the final hidden states are concatenated and passed through ``tanh_layers`` square tanh layers
(eqs. 3-4) and a linear layer to one number (eq. 5). :class:`Vocab` / :func:`collate` turn delexicalised
token lists into the network's padded id tensors; :func:`round_clip` is the paper's prediction rule (round to
0.5, clip to the training range) and :func:`correlations` the figures every table reports.

Pure torch / numpy: the scorer imports this module, training (``qe.ratpred.task``) builds on it.
"""
from __future__ import annotations

import hashlib
import math
from collections import Counter

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence


class RatPredNet(nn.Module):
    def __init__(self, vocab_size: int, embedding_dim: int = 300, hidden_size: int = 300, tanh_layers: int = 2,
                 dropout: float = 0.5, pad_id: int = 0):
        super().__init__()
        self.emb_mr = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_id)
        self.emb_out = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_id)
        self.drop = nn.Dropout(dropout)
        self.gru_mr = nn.GRU(embedding_dim, hidden_size, batch_first=True)
        self.gru_out = nn.GRU(embedding_dim, hidden_size, batch_first=True)
        d = 2 * hidden_size
        self.tanh = nn.ModuleList(nn.Linear(d, d) for _ in range(tanh_layers))
        self.head = nn.Linear(d, 1)

    def _encode(self, emb, gru, x, lens):
        e = self.drop(emb(x))
        packed = pack_padded_sequence(e, lens.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        _, h = gru(packed)
        return h[-1]

    def forward(self, mr, mr_len, out, out_len):
        z = torch.cat([self._encode(self.emb_mr, self.gru_mr, mr, mr_len),
                       self._encode(self.emb_out, self.gru_out, out, out_len)], dim=-1)
        for lin in self.tanh:
            z = torch.tanh(lin(z))
        return self.head(z).squeeze(-1)


# ------------------------------------------------------------------------------------------ input encoding
PAD, UNK = "<pad>", "<unk>"


class Vocab:
    def __init__(self, tokens: list[str]):
        self.itos = [PAD, UNK] + [t for t in tokens if t not in (PAD, UNK)]
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    @classmethod
    def build(cls, token_lists, min_count: int = 1) -> "Vocab":
        """Vocabulary of the tokens in ``token_lists`` (an iterable of token *lists*)."""
        c: Counter = Counter()
        for toks in token_lists:
            if isinstance(toks, str):  # a bare string would be counted character by character
                raise TypeError(f"Vocab.build takes token lists, got the string {toks!r}")
            c.update(toks)
        return cls(sorted(t for t, n in c.items() if n >= min_count))

    def encode(self, toks: list[str]) -> list[int]:
        return [self.stoi.get(t, 1) for t in toks] or [1]

    def __len__(self) -> int:
        return len(self.itos)

    def fingerprint(self) -> str:
        return hashlib.sha256("\n".join(self.itos).encode()).hexdigest()


def pad_batch(seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    lens = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    x = torch.zeros(len(seqs), int(lens.max()), dtype=torch.long)
    for j, s in enumerate(seqs):
        x[j, :len(s)] = torch.tensor(s, dtype=torch.long)
    return x, lens


def collate(items):
    """[(mr ids, output ids, rating), ...] -> the network's padded batch (``y``: the ratings)."""
    mrs, outs, ys = zip(*items)
    m, ml = pad_batch(list(mrs))
    o, ol = pad_batch(list(outs))
    return {"mr": m, "mr_len": ml, "out": o, "out_len": ol, "y": torch.tensor(ys, dtype=torch.float32)}


# ------------------------------------------------------------------------------------- predictions, figures
def round_clip(pred: np.ndarray, round_to: float | None, lo: float | None, hi: float | None) -> np.ndarray:
    """Round to the precision ``round_to`` (None: no rounding) and clip to [lo, hi] (None: open)."""
    p = np.asarray(pred, dtype=np.float64)
    if round_to:
        p = np.round(p / round_to) * round_to
    if lo is not None or hi is not None:
        p = np.clip(p, lo if lo is not None else -np.inf, hi if hi is not None else np.inf)
    return p


def correlations(pred, gold) -> dict[str, float]:
    """Pearson, Spearman (0.0 when predictions are constant), MAE, RMSE."""
    from scipy.stats import pearsonr, spearmanr

    p, g = np.asarray(pred, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    if len(p) < 2 or np.all(p == p[0]) or np.all(g == g[0]):
        pr = sr = 0.0
    else:
        pr, sr = float(pearsonr(p, g)[0]), float(spearmanr(p, g)[0])
    return {"pearson": pr, "spearman": sr, "mae": float(np.mean(np.abs(p - g))),
            "rmse": float(math.sqrt(np.mean((p - g) ** 2)))}
