"""LightningModule wrapping :class:`~qe.lm.model.LSTMLM`: Adam, token-level cross-entropy, perplexity."""
from __future__ import annotations

import math
import time

import lightning.pytorch as pl
import torch
from torchmetrics import SumMetric

from qe.lm.model import LSTMLM


class LanguageModelModule(pl.LightningModule):
    def __init__(
        self,
        vocab_size: int,
        pad_id: int = 0,
        embedding_dim: int = 512,
        hidden_size: int = 512,
        num_layers: int = 2,
        dropout: float = 0.2,
        tie_weights: bool = True,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
    ):
        super().__init__()
        self.save_hyperparameters()
        self.model = LSTMLM(vocab_size, embedding_dim, hidden_size, num_layers, dropout, tie_weights, pad_id)
        self.val_nll, self.val_tokens = SumMetric(), SumMetric()
        self.test_nll, self.test_tokens = SumMetric(), SumMetric()

    def model_config(self) -> dict:
        h = self.hparams
        return {k: h[k] for k in ("vocab_size", "embedding_dim", "hidden_size", "num_layers", "dropout",
                                  "tie_weights", "pad_id")}

    def training_step(self, batch, batch_idx):
        nll, n = self.model.loss(batch["inp"], batch["tgt"])
        loss = nll / n.clamp(min=1)
        self.log("train/loss", loss, prog_bar=True, batch_size=int(n))
        return loss

    def _eval_step(self, batch, nll_metric, tok_metric):
        nll, n = self.model.loss(batch["inp"], batch["tgt"])
        nll_metric.update(nll.detach().double())
        tok_metric.update(n.double())

    def validation_step(self, batch, batch_idx):
        self._eval_step(batch, self.val_nll, self.val_tokens)

    def on_validation_epoch_end(self):
        loss = self.val_nll.compute() / self.val_tokens.compute().clamp(min=1)
        self.log_dict({"val/loss": loss.float(), "val/ppl": torch.exp(loss).float()}, prog_bar=True, sync_dist=False)
        self.val_nll.reset()
        self.val_tokens.reset()

    def test_step(self, batch, batch_idx):
        self._eval_step(batch, self.test_nll, self.test_tokens)

    def on_test_epoch_end(self):
        loss = self.test_nll.compute() / self.test_tokens.compute().clamp(min=1)
        self.log_dict({"test/loss": loss.float(), "test/ppl": torch.exp(loss).float(),
                       "test/tokens": self.test_tokens.compute().float()})
        self.test_nll.reset()
        self.test_tokens.reset()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)


class TokenThroughput(pl.Callback):
    """Logs training tokens/s (target tokens, all ranks together) per epoch, excluding validation time."""

    def __init__(self):
        self._tokens = 0
        self._time = 0.0
        self._t0 = None

    def on_train_epoch_start(self, trainer, pl_module):
        self._tokens, self._time = 0, 0.0

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self._t0 = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if torch.cuda.is_available() and pl_module.device.type == "cuda":
            torch.cuda.synchronize()
        self._time += time.perf_counter() - (self._t0 or time.perf_counter())
        self._tokens += int(batch["ntokens"])

    def on_train_epoch_end(self, trainer, pl_module):
        if self._time > 0:
            tps = self._tokens * trainer.world_size / self._time
            pl_module.log("train/tokens_per_sec", float(tps), sync_dist=False, rank_zero_only=True)
            self.last_tokens_per_sec = tps
