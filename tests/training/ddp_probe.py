"""A callback for the DDP test: each rank writes the token rows of every training batch it saw."""
import json
from pathlib import Path

import lightning.pytorch as pl


class RecordBatches(pl.Callback):
    def __init__(self, out_dir: str):
        self.out_dir = Path(out_dir)
        self.rows: list[list[int]] = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        pad = trainer.datamodule.tokenizer.pad_id
        for row in batch["tgt"].tolist():  # targets: the sentence's tokens then </s>, then padding
            self.rows.append([t for t in row if t != pad])

    def on_train_epoch_end(self, trainer, pl_module):
        self.out_dir.mkdir(parents=True, exist_ok=True)
        n_train = len(trainer.train_dataloader.dataset)
        (self.out_dir / f"rank{trainer.global_rank}_epoch{trainer.current_epoch}.json").write_text(
            json.dumps({"rank": trainer.global_rank, "world": trainer.world_size, "n_train": n_train, "rows": self.rows}))
        self.rows = []
