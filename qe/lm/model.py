"""The LSTM language model as a plain ``nn.Module`` (used by the LightningModule for training and by the scorer).

Sentence-level LM: every sentence starts from a zero state with ``<s>`` and ends by predicting ``</s>``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class LSTMLM(nn.Module):
    def __init__(
        self,
        vocab_size: int,
        embedding_dim: int = 512,
        hidden_size: int = 512,
        num_layers: int = 2,
        dropout: float = 0.2,
        tie_weights: bool = True,
        pad_id: int = 0,
    ):
        super().__init__()
        self.vocab_size = vocab_size
        self.pad_id = pad_id
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_id)
        self.drop = nn.Dropout(dropout)
        self.lstm = nn.LSTM(embedding_dim, hidden_size, num_layers, batch_first=True,
                            dropout=dropout if num_layers > 1 else 0.0)
        # tying needs matching sizes; a projection keeps it possible when they differ
        self.proj = nn.Linear(hidden_size, embedding_dim, bias=False) if tie_weights and hidden_size != embedding_dim else None
        self.decoder = nn.Linear(embedding_dim if self.proj is not None else hidden_size, vocab_size)
        if tie_weights:
            self.decoder.weight = self.embedding.weight
        self.tie_weights = tie_weights
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def hidden(self, inp: torch.Tensor, state=None):
        """(B, T) token ids -> (B, T, H') states fed to the decoder, and the LSTM state."""
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

    def forward(self, inp: torch.Tensor, state=None):
        h, state = self.hidden(inp, state)
        return self.decoder(h), state

    def loss(self, inp: torch.Tensor, tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Summed NLL over non-pad targets and the number of those targets.

        Only the positions that carry a target go through the (large) output layer.
        """
        h, _ = self.hidden(inp)
        mask = tgt != self.pad_id
        logits = self.decoder(h[mask])
        nll = F.cross_entropy(logits.float(), tgt[mask], reduction="sum")
        return nll, mask.sum()

    @torch.no_grad()
    def sequence_logprobs(self, inp: torch.Tensor, tgt: torch.Tensor, chunk: int = 256) -> torch.Tensor:
        """Sum of ln p(tgt_t | inp_<=t) per row, over non-pad targets; (B,) float64.

        Runs through time in chunks of ``chunk`` steps carrying the LSTM state, so memory for the output layer is
        ``B x chunk x V`` whatever the sentence length (exact: an LSTM's state carries everything).
        """
        B, T = inp.shape
        total = torch.zeros(B, dtype=torch.float64, device=inp.device)
        state = None
        for s in range(0, T, chunk):
            h, state = self.hidden(inp[:, s : s + chunk], state)
            t = tgt[:, s : s + chunk]
            logp = torch.log_softmax(self.decoder(h).float(), dim=-1)
            lp = logp.gather(-1, t.unsqueeze(-1)).squeeze(-1)
            lp = lp.masked_fill(t == self.pad_id, 0.0)
            total += lp.sum(1, dtype=torch.float64)
        return total
