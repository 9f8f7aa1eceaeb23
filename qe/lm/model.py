"""The LSTM language model as a plain ``nn.Module`` (used by the LightningModule for training and by the scorer).

Sentence-level LM: every sentence starts from a zero state with ``<s>`` and ends by predicting ``</s>``.

Output layer (``output_layer``):

* ``full`` — one linear layer over the whole vocabulary and a softmax (optionally tied to the embedding);
* ``adaptive`` — :class:`torch.nn.AdaptiveLogSoftmaxWithLoss` (Grave et al. 2017): a head over the
  ``adaptive_cutoffs[0]`` most frequent tokens plus one entry per tail cluster, and smaller tail clusters. The
  probabilities stay exact and normalised over the whole vocabulary; a target's log-probability needs the head
  and the target's own cluster only. Adaptive softmax pays off only when the head holds the frequent tokens, so
  the model keeps its own frequency order (the buffer ``output_rank``: token id -> rank by training frequency,
  set by :meth:`LSTMLM.set_output_order`) and the tokenizer's ids stay as they are (old exports stay valid).
"""
from __future__ import annotations

import contextlib
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from qe.core.config import conf_defaults

#: the defaults of model=lstm_lm, written once in qe/conf/model/lstm_lm.yaml
D = conf_defaults("model/lstm_lm")

OUTPUT_LAYERS = ("full", "adaptive")

#: the recurrence runs on one intra-op thread when a time step costs fewer multiply-adds than this (CPU only):
#: a step of a small batch is far too small to split, and on a busy machine every step's thread barrier waits for
#: a descheduled thread (a 50,000-step sentence took minutes with 2 threads, a second with 1)
SERIAL_STEP_MACS = 1 << 24
#: the most time steps run through the LSTM at once when scoring (memory O(chunk x (hidden + vocabulary)))
MAX_SCORE_CHUNK = 4096


def effective_cutoffs(cutoffs: Sequence[int] | None, vocab_size: int) -> list[int]:
    """The cutoffs actually used for a vocabulary of ``vocab_size``: the configured ones below ``vocab_size - 1``
    (so one configuration serves any vocabulary); none left (or none given) -> one cutoff at a quarter of it."""
    keep = sorted({int(c) for c in (cutoffs or []) if 0 < int(c) < vocab_size - 1})
    return keep or [max(1, vocab_size // 4)]


@contextlib.contextmanager
def intra_op_threads(n: int | None):
    """Run the block with at most ``n`` intra-op threads (``None``: unchanged); restores the setting after."""
    before = torch.get_num_threads()
    if n is None or n >= before:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class LSTMLM(nn.Module):
    def __init__(
        self,
        vocab_size: int,
        embedding_dim: int = D["embedding_dim"],
        hidden_size: int = D["hidden_size"],
        num_layers: int = D["num_layers"],
        dropout: float = D["dropout"],
        tie_weights: bool = D["tie_weights"],
        pad_id: int = 0,
        output_layer: str = D["output_layer"],
        adaptive_cutoffs: Sequence[int] | None = D["adaptive_cutoffs"],
        adaptive_div_value: float = D["adaptive_div_value"],
    ):
        super().__init__()
        if output_layer not in OUTPUT_LAYERS:
            raise ValueError(f"output_layer={output_layer!r}: choose one of {OUTPUT_LAYERS}")
        if output_layer == "adaptive" and tie_weights:
            raise ValueError("output_layer=adaptive has no full output matrix to tie to the embedding: "
                             "set tie_weights=false (model=lstm_lm_adaptive does)")
        self.vocab_size = vocab_size
        self.pad_id = pad_id
        self.output_layer = output_layer
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_id)
        self.drop = nn.Dropout(dropout)
        self.lstm = nn.LSTM(embedding_dim, hidden_size, num_layers, batch_first=True,
                            dropout=dropout if num_layers > 1 else 0.0)
        # tying needs matching sizes; a projection keeps it possible when they differ
        self.proj = nn.Linear(hidden_size, embedding_dim, bias=False) if tie_weights and hidden_size != embedding_dim else None
        out_dim = embedding_dim if self.proj is not None else hidden_size
        self.tie_weights = tie_weights
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
        if output_layer == "full":
            self.decoder = nn.Linear(out_dim, vocab_size)
            if tie_weights:
                self.decoder.weight = self.embedding.weight
            nn.init.zeros_(self.decoder.bias)
        else:
            self.adaptive = nn.AdaptiveLogSoftmaxWithLoss(out_dim, vocab_size,
                                                          effective_cutoffs(adaptive_cutoffs, vocab_size),
                                                          div_value=float(adaptive_div_value), head_bias=True)
            # token id -> position in the adaptive softmax (frequency rank); identity until set_output_order
            self.register_buffer("output_rank", torch.arange(vocab_size))

    # ---- output order (adaptive softmax) ----------------------------------------------------------------
    def set_output_order(self, counts) -> None:
        """Order the adaptive softmax by ``counts`` (target frequency per token id, most frequent first; ties by
        id). No effect on a full output layer."""
        if self.output_layer != "adaptive":
            return
        counts = torch.as_tensor(counts, dtype=torch.float64).flatten()
        if counts.numel() != self.vocab_size:
            raise ValueError(f"{counts.numel()} counts for a vocabulary of {self.vocab_size}")
        ids = torch.arange(self.vocab_size)
        order = sorted(range(self.vocab_size), key=lambda i: (-float(counts[i]), i))
        rank = torch.empty_like(ids)
        rank[torch.tensor(order)] = ids
        self.output_rank.copy_(rank.to(self.output_rank.device))

    # ---- network ------------------------------------------------------------------------------------------
    def hidden(self, inp: torch.Tensor, state=None):
        """(B, T) token ids -> (B, T, H') states fed to the output layer, and the LSTM state."""
        x = self.drop(self.embedding(inp))
        if x.device.type == "cpu" and torch.is_autocast_enabled("cpu"):
            # CPU autocast (trainer.precision=bf16-mixed on CPU): oneDNN has no reduced-precision LSTM primitive
            # on most CPUs, so the recurrence runs in fp32; the output layer still runs under autocast
            with torch.autocast("cpu", enabled=False):
                out, state = self.lstm(x.float(), state)
        else:
            out, state = self.lstm(x, state)
        out = self.drop(out)
        if self.proj is not None:
            out = self.proj(out)
        return out, state

    def log_probs(self, h: torch.Tensor) -> torch.Tensor:
        """(..., H') -> (..., V) normalised log-probabilities over token ids (float32)."""
        if self.output_layer == "full":
            return torch.log_softmax(self.decoder(h).float(), dim=-1)
        with torch.autocast(h.device.type, enabled=False):
            lp = self.adaptive.log_prob(h.float().reshape(-1, h.shape[-1]))  # in rank order
        return lp[:, self.output_rank].reshape(*h.shape[:-1], self.vocab_size)

    def forward(self, inp: torch.Tensor, state=None):
        """Full-softmax logits, or (adaptive) log-probabilities: either way ``log_softmax`` of the output gives the
        model's log-probabilities."""
        h, state = self.hidden(inp, state)
        return (self.decoder(h) if self.output_layer == "full" else self.log_probs(h)), state

    def target_logprobs(self, h: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """ln p(tgt | h) for every position (float32, shape of ``tgt``); pad targets give 0.

        Full: log-softmax over the vocabulary, gathered at the target. Adaptive: the head and the target's cluster
        only (exact: the same normalised distribution as :meth:`log_probs`).
        """
        mask = tgt != self.pad_id
        if self.output_layer == "full":
            lp = torch.log_softmax(self.decoder(h).float(), dim=-1).gather(-1, tgt.unsqueeze(-1)).squeeze(-1)
            return lp.masked_fill(~mask, 0.0)
        out = torch.zeros(tgt.shape, dtype=torch.float32, device=tgt.device)
        if mask.any():
            out[mask] = self._adaptive_target(h[mask], tgt[mask])
        return out

    def _adaptive_target(self, h: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """(N, H'), (N,) -> (N,) target log-probabilities through the adaptive softmax (fp32, no autocast)."""
        with torch.autocast(h.device.type, enabled=False):
            return self.adaptive(h.float(), self.output_rank[tgt]).output.reshape(-1)

    def loss(self, inp: torch.Tensor, tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Summed NLL over non-pad targets and the number of those targets.

        Only the positions that carry a target go through the (large) output layer.
        """
        h, _ = self.hidden(inp)
        mask = tgt != self.pad_id
        if self.output_layer == "adaptive":
            return -self._adaptive_target(h[mask], tgt[mask]).sum(), mask.sum()
        logits = self.decoder(h[mask])
        nll = F.cross_entropy(logits.float(), tgt[mask], reduction="sum")
        return nll, mask.sum()

    # ---- scoring ------------------------------------------------------------------------------------------
    def step_macs(self, batch: int) -> int:
        """Multiply-adds of one LSTM time step for ``batch`` rows (all layers)."""
        H, E = self.lstm.hidden_size, self.lstm.input_size
        return batch * sum(4 * H * ((E if layer == 0 else H) + H) for layer in range(self.lstm.num_layers))

    def recurrence_threads(self, batch: int, device: torch.device | str = "cpu") -> int | None:
        """Intra-op threads for the recurrence: 1 for small steps on CPU (:data:`SERIAL_STEP_MACS`), else as set."""
        if torch.device(device).type != "cpu":
            return None
        return 1 if self.step_macs(batch) < SERIAL_STEP_MACS else None

    @torch.no_grad()
    def sequence_logprobs(self, inp: torch.Tensor, tgt: torch.Tensor, chunk: int = 256,
                          threads: int | None = -1) -> torch.Tensor:
        """Sum of ln p(tgt_t | inp_<=t) per row, over non-pad targets; (B,) float64.

        The whole sequence goes through the LSTM (no window), ``chunk`` time steps at a time carrying the state
        (exact: the state carries everything), and each chunk through the output layer, so memory is
        ``O(B x chunk x (H + V))`` and time linear in the length. ``threads``: intra-op threads for the recurrence
        (-1: :meth:`recurrence_threads`; ``None``: unchanged).
        """
        B, T = inp.shape
        chunk = max(1, int(chunk))
        if threads == -1:
            threads = self.recurrence_threads(B, inp.device)
        total = torch.zeros(B, dtype=torch.float64, device=inp.device)
        state = None
        for s in range(0, T, chunk):
            with intra_op_threads(threads):
                h, state = self.hidden(inp[:, s : s + chunk], state)
            total += self.target_logprobs(h, tgt[:, s : s + chunk]).sum(1, dtype=torch.float64)
        return total
