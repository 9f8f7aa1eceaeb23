"""Sentence corpora -> padded ``<s> w1 .. wn`` / ``w1 .. wn </s>`` batches, bucketed by length.

Two ways to size a training batch (:class:`BucketBatchSampler`):

* ``batch_size`` sentences (the default, what every CPU recipe uses);
* ``max_tokens``: at most that many *padded* tokens per batch (rows x (longest sentence + 1)), so a batch of short
  sentences holds more of them than one of long sentences and every batch costs about the same memory and time. This
  is how ``trainer=gpu`` fills a GPU (``lm_gpu.max_tokens``, :func:`qe.lm.task.build`); the number of sentences per
  batch then varies, and :meth:`LMDataModule.train_batch_stats` says how many there are on average.
"""
from __future__ import annotations

import logging
import math
import random
from typing import Iterator, Sequence

import lightning.pytorch as pl
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from qe.data.corpora import corpus_fingerprint
from qe.core.tokenization import Tokenizer

log = logging.getLogger(__name__)


class EncodedSentences(Dataset):
    def __init__(self, ids: list[np.ndarray]):
        self.ids = ids

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.ids[i]


def encode_corpus(tokenizer: Tokenizer, sentences: Sequence[str], max_length: int | None = None,
                  drop_empty: bool = True) -> tuple[list[np.ndarray], int]:
    """Encode sentences; drop empty ones and (when ``max_length`` is set) ones longer than it. Returns ids, #dropped."""
    out, dropped = [], 0
    for ids in tokenizer.encode_batch(list(sentences)):
        if (drop_empty and not ids) or (max_length is not None and len(ids) > max_length):
            dropped += 1
            continue
        out.append(np.asarray(ids, dtype=np.int64))
    return out, dropped


class BucketBatchSampler(Sampler[list[int]]):
    """Batches of similar-length sentences: shuffle, cut into buckets of ``bucket_batches`` batches, sort each
    bucket by length, batch, shuffle the batches. Shards batches across DDP ranks itself (every rank gets the same
    number of batches). Deterministic for a given seed and epoch.

    ``max_tokens`` (default None: ``batch_size`` sentences per batch) makes the batches token budgets instead: a
    bucket holds about ``bucket_batches * max_tokens`` tokens, and each batch as many of the bucket's sentences (longest
    first) as fit in ``max_tokens`` padded tokens, ``rows x (longest length + 1)`` (the ``<s>`` / ``</s>`` position);
    a sentence longer than the budget is a batch of its own. ``batch_size`` is not used then.
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, bucket_batches: int = 50, shuffle: bool = True,
                 seed: int = 0, num_replicas: int = 1, rank: int = 0, max_tokens: int | None = None):
        self.lengths = np.asarray(lengths)
        self.batch_size = batch_size
        self.bucket = max(1, bucket_batches) * batch_size
        self.bucket_batches = max(1, bucket_batches)
        self.max_tokens = int(max_tokens) if max_tokens else None
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens={max_tokens}: must be a positive number of tokens")
        self.shuffle = shuffle
        self.seed = seed
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self._cache: tuple[int, list[list[int]]] | None = None

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _epoch_order(self) -> tuple[np.ndarray, np.random.Generator]:
        """The epoch's sentence order (seeded shuffle, or longest first) and the generator that made it; the same
        generator then shuffles the batches (:meth:`_shuffled`), so sentence and token batches share one scheme."""
        idx = np.arange(len(self.lengths))
        rng = np.random.default_rng(self.seed + self.epoch)
        if self.shuffle:
            rng.shuffle(idx)
        else:
            idx = idx[np.argsort(-self.lengths, kind="stable")]
        return idx, rng

    def _shuffled(self, batches: list[list[int]], rng: np.random.Generator) -> list[list[int]]:
        if not self.shuffle:
            return batches
        return [batches[i] for i in rng.permutation(len(batches))]

    def _all_batches(self) -> list[list[int]]:
        if self.max_tokens is not None:
            if self._cache is None or self._cache[0] != self.epoch:  # len() and iter() of one epoch: built once
                self._cache = (self.epoch, self._token_batches())
            return self._cache[1]
        n = len(self.lengths)
        idx, rng = self._epoch_order()
        batches = []
        for s in range(0, n, self.bucket):
            chunk = idx[s : s + self.bucket]
            chunk = chunk[np.argsort(-self.lengths[chunk], kind="stable")]
            batches.extend(chunk[i : i + self.batch_size].tolist() for i in range(0, len(chunk), self.batch_size))
        return self._shuffled(batches, rng)

    def _token_batches(self) -> list[list[int]]:
        """The epoch's batches under the token budget (same shuffling scheme as the sentence batches)."""
        n = len(self.lengths)
        cost = self.lengths + 1  # padded positions a sentence needs: its tokens and <s> / </s>
        idx, rng = self._epoch_order()
        # bucket boundaries: every bucket_batches * max_tokens tokens of the (shuffled) order
        csum = np.cumsum(cost[idx])
        bucket_tokens = self.bucket_batches * self.max_tokens
        cuts = np.searchsorted(csum, np.arange(bucket_tokens, int(csum[-1]) if n else 0, bucket_tokens), side="right")
        batches = []
        for chunk in np.split(idx, cuts):
            chunk = chunk[np.argsort(-self.lengths[chunk], kind="stable")]
            s = 0
            while s < len(chunk):
                k = max(1, self.max_tokens // int(cost[chunk[s]]))  # the first row is the batch's longest
                batches.append(chunk[s : s + k].tolist())
                s += k
        return self._shuffled(batches, rng)

    def __iter__(self) -> Iterator[list[int]]:
        batches = self._all_batches()
        if self.num_replicas > 1:
            per = len(batches) // self.num_replicas if self.shuffle else math.ceil(len(batches) / self.num_replicas)
            batches = batches[self.rank :: self.num_replicas][:per]
        return iter(batches)

    def __len__(self) -> int:
        if self.max_tokens is not None:
            n = len(self._all_batches())  # exact for the current epoch
        else:
            n = math.ceil(len(self.lengths) / self.batch_size)  # upper bound used by progress bars
        if self.num_replicas > 1:
            n = n // self.num_replicas if self.shuffle else math.ceil(n / self.num_replicas)
        return n


def collate(batch: list[np.ndarray], bos: int, eos: int, pad: int) -> dict[str, torch.Tensor]:
    L = max(len(x) for x in batch) + 1
    inp = torch.full((len(batch), L), pad, dtype=torch.long)
    tgt = torch.full((len(batch), L), pad, dtype=torch.long)
    for i, x in enumerate(batch):
        t = torch.from_numpy(x)
        inp[i, 0] = bos
        inp[i, 1 : len(x) + 1] = t
        tgt[i, : len(x)] = t
        tgt[i, len(x)] = eos
    return {"inp": inp, "tgt": tgt, "ntokens": torch.tensor(sum(len(x) + 1 for x in batch))}


class LMDataModule(pl.LightningDataModule):
    def __init__(self, tokenizer: Tokenizer, train: Sequence[str], val: Sequence[str], test: Sequence[str] = (),
                 batch_size: int = 64, bucket_batches: int = 50, max_length: int | None = 128, num_workers: int = 0,
                 seed: int = 0, eval_batch_size: int | None = None, name: str = "", max_tokens: int | None = None):
        super().__init__()
        self.tokenizer = tokenizer
        self.name = name
        self.raw = {"train": list(train), "val": list(val), "test": list(test)}
        self.batch_size = batch_size
        self.eval_batch_size = eval_batch_size or batch_size
        self.bucket_batches = bucket_batches
        self.max_length = max_length
        self.num_workers = num_workers
        #: token budget per batch (padded tokens), training and evaluation; None: ``batch_size`` sentences
        self.max_tokens = int(max_tokens) if max_tokens else None
        self.seed = seed
        self.data: dict[str, EncodedSentences] = {}
        self.stats: dict[str, int] = {}

    def has_test(self) -> bool:
        return bool(self.raw["test"])

    def data_info(self) -> dict:
        """What the export's manifest says about the data: source names, training-corpus checksum, sizes."""
        info = {"name": self.name, "sha256": corpus_fingerprint(self.raw["train"]),
                "train_sentences": len(self.raw["train"]), "val_sentences": len(self.raw["val"]),
                "test_sentences": len(self.raw["test"])}
        info.update(self.stats)
        return info

    def setup(self, stage: str | None = None) -> None:
        if self.data:
            return
        for split, sents in self.raw.items():
            # long training sentences are skipped (never cut: a cut sentence would teach a wrong </s>);
            # validation and test keep every sentence so perplexity covers the whole split
            ids, dropped = encode_corpus(self.tokenizer, sents, self.max_length if split == "train" else None)
            self.data[split] = EncodedSentences(ids)
            self.stats[f"{split}_sentences"] = len(ids)
            self.stats[f"{split}_tokens"] = int(sum(len(x) for x in ids))
            self.stats[f"{split}_dropped"] = dropped
        log.info("LM data: %s", self.stats)

    def _loader(self, split: str, shuffle: bool, batch_size: int) -> DataLoader:
        ds = self.data[split]
        world, rank = 1, 0
        if self.trainer is not None:
            world, rank = self.trainer.world_size, self.trainer.global_rank
        sampler = BucketBatchSampler([len(x) for x in ds.ids], batch_size, self.bucket_batches, shuffle,
                                     self.seed, world, rank, max_tokens=self.max_tokens)
        tok = self.tokenizer
        return DataLoader(ds, batch_sampler=sampler, num_workers=self.num_workers,
                          collate_fn=_Collate(tok.bos_id, tok.eos_id, tok.pad_id),
                          persistent_workers=self.num_workers > 0, pin_memory=self._pin_memory())

    def _pin_memory(self) -> bool:
        """Page-locked batches when the training runs on a CUDA device (faster, asynchronous host-to-device copies)."""
        if self.trainer is not None:
            return self.trainer.strategy.root_device.type == "cuda"
        return torch.cuda.is_available()

    def train_batch_stats(self) -> dict[str, float]:
        """The training batches of one epoch on one device: how many, and the mean sentences, target tokens and
        padded tokens per batch (what the learning-rate rule of ``trainer=gpu`` reads). Sets the data up."""
        self.setup("fit")
        lengths = np.asarray([len(x) for x in self.data["train"].ids])
        sampler = BucketBatchSampler(lengths, self.batch_size, self.bucket_batches, True, self.seed,
                                     max_tokens=self.max_tokens)
        batches = list(sampler)
        nb = max(1, len(batches))
        padded = sum(len(b) * (int(lengths[b].max()) + 1) for b in batches if b)
        return {"batches": len(batches), "sentences_per_batch": len(lengths) / nb,
                "tokens_per_batch": float((lengths + 1).sum()) / nb, "padded_tokens_per_batch": padded / nb}

    def train_dataloader(self):
        return self._loader("train", True, self.batch_size)

    def val_dataloader(self):
        return self._loader("val", False, self.eval_batch_size)

    def test_dataloader(self):
        return self._loader("test", False, self.eval_batch_size)


class _Collate:
    """Picklable collate function (worker processes)."""

    def __init__(self, bos, eos, pad):
        self.bos, self.eos, self.pad = bos, eos, pad

    def __call__(self, batch):
        return collate(batch, self.bos, self.eos, self.pad)
