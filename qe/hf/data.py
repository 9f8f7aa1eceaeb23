"""Training data of the shared Hugging Face classifier (:class:`qe.hf.classifier.SequenceClassifierModule`): single
texts or text pairs with labels, batched with dynamic padding, with several named validation sets. GRUEN's CoLA and
SOP builders and the content aligner's feed it.

Moved here from :mod:`qe.gruen.data`, which still exports ``TextClassificationDataModule``.
"""
from __future__ import annotations

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader


class ListDataset(torch.utils.data.Dataset):
    """A list as a map-style dataset (GRUEN's MLM data module uses it too)."""

    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


class ResumableLoader(DataLoader):
    """A shuffling :class:`~torch.utils.data.DataLoader` whose place in the epoch is kept in checkpoints (Lightning's
    ``state_dict`` / ``load_state_dict`` interface for data loaders): a run resumed from a checkpoint written in the
    middle of an epoch (a validation every N steps, a SIGTERM) goes on with that epoch's batch order where it
    stopped, instead of drawing the epoch again from its start (which would train on its first batches twice and
    never on its last ones). At an epoch's end Lightning hands the state back only to step-based schedules
    (``trainer.max_steps``), whose next epoch is then the one the uninterrupted run draws; an epoch-based run resumed
    there draws its next epoch from the seed, as before.

    The state: the shuffling generator's state when the epoch's iterator was created, its state now, and the batches
    trained in the epoch (``batches_done``: a callable giving Lightning's own count, so that a batch fetched ahead
    is not counted). An uninterrupted run draws exactly what a plain DataLoader draws."""

    def __init__(self, *args, batches_done=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.batches_done = batches_done
        self.epoch_start_state: torch.Tensor | None = None
        self._resume: tuple[torch.Tensor, int] | None = None

    def __iter__(self):
        skip = 0
        if self._resume is not None:
            state, skip = self._resume
            self._resume = None
            self.generator.set_state(state)
        self.epoch_start_state = self.generator.get_state()
        it = super().__iter__()
        for _ in range(skip):  # the batches the interrupted run trained on (collated and dropped: cheap here)
            next(it)
        return it

    def state_dict(self) -> dict:
        if self.epoch_start_state is None or self.batches_done is None:
            return {}
        return {"epoch_start_state": self.epoch_start_state, "generator_state": self.generator.get_state(),
                "batches_done": int(self.batches_done())}

    def load_state_dict(self, state: dict) -> None:
        if not state:
            return
        done = int(state["batches_done"])
        if 0 < done < len(self):
            self._resume = (state["epoch_start_state"], done)
        else:  # at an epoch's end (or start): the next epoch is drawn from where the generator stood
            self.generator.set_state(state["generator_state"])


class TextClassificationDataModule(pl.LightningDataModule):
    """Single texts or text pairs with labels; dynamic padding; several named validation sets.

    Inputs longer than ``max_length`` word pieces are cut. Single texts keep their start. Pairs are cut by
    ``pair_truncation``: ``longest_first`` (HF: tokens come off the end of the longer text) or ``boundary``
    (the end of the first text and the start of the second are kept, :func:`qe.hf.tokens.keep_boundary` — the
    rule GRUEN's SOP scorer applies, so that the order head is trained on what it will see).
    """

    def __init__(self, tokenizer, train: tuple[list, list[int]], val: dict[str, tuple[list, list[int]]],
                 batch_size: int = 32, max_length: int = 128, num_workers: int = 0, seed: int = 0,
                 pair_truncation: str = "longest_first"):
        super().__init__()
        if pair_truncation not in ("longest_first", "boundary"):
            raise ValueError(f"pair_truncation={pair_truncation!r}: use 'longest_first' or 'boundary'")
        self.tokenizer = tokenizer
        self.train_data, self.val_data = train, val
        self.val_names = list(val)
        self.batch_size, self.max_length, self.num_workers, self.seed = batch_size, max_length, num_workers, seed
        self.pair_truncation = pair_truncation
        self._special = None

    def has_test(self) -> bool:
        return False

    def _boundary_pairs(self, texts) -> dict:
        from qe.hf.tokens import SpecialTokens, keep_boundary, pad_pairs

        if self._special is None:
            self._special = SpecialTokens(self.tokenizer)
        tok, sp = self.tokenizer, self._special
        ea = tok([a for a, _ in texts], add_special_tokens=False)["input_ids"]
        eb = tok([b for _, b in texts], add_special_tokens=False)["input_ids"]
        rows = [sp.pair(*keep_boundary(a, b, self.max_length - sp.n_pair)[:2]) for a, b in zip(ea, eb)]
        return pad_pairs(rows, tok.pad_token_id if tok.pad_token_id is not None else 0)

    def _collate(self, items):
        texts = [t for t, _ in items]
        labels = torch.tensor([y for _, y in items], dtype=torch.long)
        if isinstance(texts[0], (tuple, list)) and self.pair_truncation == "boundary":
            enc = self._boundary_pairs(texts)
        elif isinstance(texts[0], (tuple, list)):
            enc = self.tokenizer([a for a, _ in texts], [b for _, b in texts], truncation="longest_first",
                                 max_length=self.max_length, padding=True, return_tensors="pt")
        else:
            enc = self.tokenizer(texts, truncation=True, max_length=self.max_length, padding=True, return_tensors="pt")
        enc = dict(enc)
        enc["labels"] = labels
        return enc

    def _loader(self, data, shuffle):
        items = list(zip(*data))
        g = torch.Generator().manual_seed(self.seed)
        return DataLoader(ListDataset(items), batch_size=self.batch_size, shuffle=shuffle, generator=g,
                          collate_fn=self._collate, num_workers=self.num_workers)

    def _batches_done(self) -> int:
        """Training batches completed in the current epoch (Lightning's count; 0 without a trainer)."""
        trainer = getattr(self, "trainer", None)
        if trainer is None:
            return 0
        return int(trainer.fit_loop.epoch_loop.batch_progress.current.processed)

    def train_dataloader(self):
        items = list(zip(*self.train_data))
        g = torch.Generator().manual_seed(self.seed)
        return ResumableLoader(ListDataset(items), batch_size=self.batch_size, shuffle=True, generator=g,
                               collate_fn=self._collate, num_workers=self.num_workers,
                               batches_done=self._batches_done)

    def val_dataloader(self):
        return [self._loader(self.val_data[k], False) for k in self.val_names]


__all__ = ["TextClassificationDataModule", "ListDataset", "ResumableLoader"]
