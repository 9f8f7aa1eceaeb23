"""The RatPred network (paper Section 2, Figure 1) and its LightningModule.

Two GRU encoders (MR tokens, output tokens), each with its own embedding table; dropout on the encoder
inputs; the final hidden states are concatenated and passed through ``tanh_layers`` square tanh layers
(eqs. 3-4) and a linear layer to one number (eq. 5). Loss: mean squared error against the rating.
Validation reports Pearson and Spearman of the (rounded, clipped) predictions with the dev ratings and their
mean ``val/corr``, the dev-selection criterion ("Pearson and Spearman ... with equal importance").
"""
from __future__ import annotations

import logging
import math

import lightning.pytorch as pl
import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

log = logging.getLogger(__name__)


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


class RatPredModule(pl.LightningModule):
    def __init__(self, vocab_size: int, embedding_dim: int = 300, hidden_size: int = 300, tanh_layers: int = 2,
                 dropout: float = 0.5, lr: float = 1e-4, round_to: float | None = 0.5,
                 clip_lo: float | None = 1.0, clip_hi: float | None = 6.0, select_rounded: bool = False,
                 init_bias: float | None = None):
        super().__init__()
        self.save_hyperparameters()
        self.net = RatPredNet(vocab_size, embedding_dim, hidden_size, tanh_layers, dropout)
        if init_bias is not None:
            # start at the mean training rating: otherwise the first hundreds of updates (Adam moves each
            # weight by ~lr per step) only shift the output from 0 towards ~4.4, saturating the tanh layers
            with torch.no_grad():
                self.net.head.bias.fill_(float(init_bias))
        self._val_pred: list[torch.Tensor] = []
        self._val_gold: list[torch.Tensor] = []

    def model_config(self) -> dict:
        h = self.hparams
        return {k: h[k] for k in ("vocab_size", "embedding_dim", "hidden_size", "tanh_layers", "dropout")}

    def forward(self, batch):
        return self.net(batch["mr"], batch["mr_len"], batch["out"], batch["out_len"])

    def training_step(self, batch, batch_idx):
        loss = nn.functional.mse_loss(self(batch), batch["y"])
        self.log("train/mse", loss, prog_bar=True, batch_size=len(batch["y"]))
        return loss

    def validation_step(self, batch, batch_idx):
        self._val_pred.append(self(batch).detach().float().cpu())
        self._val_gold.append(batch["y"].detach().float().cpu())

    def on_validation_epoch_end(self):
        if not self._val_pred:
            return
        pred = torch.cat(self._val_pred).numpy()
        gold = torch.cat(self._val_gold).numpy()
        self._val_pred.clear()
        self._val_gold.clear()
        h = self.hparams
        m = correlations(round_clip(pred, h.round_to, h.clip_lo, h.clip_hi), gold)
        raw = correlations(pred, gold)
        m["corr_rounded"] = (m["pearson"] + m["spearman"]) / 2
        m["corr_raw"] = (raw["pearson"] + raw["spearman"]) / 2
        # selection criterion: on raw predictions by default - rounded predictions of an early, still
        # narrow model collapse to one or two values and give a flat 0 that patience cannot see past
        m["corr"] = m["corr_rounded"] if h.select_rounded else m["corr_raw"]
        self.log_dict({f"val/{k}": float(v) for k, v in m.items()}, prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


class KeepBest(pl.Callback):
    """Keep the weights with the best ``val/corr`` in memory (no checkpoint files); optional patience
    (never before ``min_passes`` passes, like the authors' ``min_passes``).

    ``best`` / ``state`` can be seeded with an earlier score and weights (a later stage then only replaces
    them when it beats that score).
    """

    def __init__(self, monitor: str = "val/corr", patience: int | None = None, best: float = -math.inf,
                 state: dict | None = None, min_passes: int = 0):
        self.monitor, self.patience, self.min_passes = monitor, patience, min_passes
        self.best, self.state = best, state
        self.best_epoch, self.history = -1, []
        self._bad = 0

    def on_validation_end(self, trainer, module):
        if trainer.sanity_checking:
            return
        v = trainer.callback_metrics.get(self.monitor)
        if v is None:
            return
        v = float(v)
        self.history.append(v)
        log.info("epoch %d %s=%.4f (best %.4f)", trainer.current_epoch, self.monitor, v, max(v, self.best))
        if v > self.best:
            self.best, self.best_epoch, self._bad = v, trainer.current_epoch, 0
            self.state = {k: t.detach().cpu().clone() for k, t in module.state_dict().items()}
        else:
            self._bad += 1
            if self.patience is not None and self._bad >= self.patience and \
                    trainer.current_epoch + 1 >= self.min_passes:
                trainer.should_stop = True
