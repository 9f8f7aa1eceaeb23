"""Training data for the GRUEN parts: CoLA (acceptability), sentence corpora (MLM head), documents (SOP).

* CoLA: ``<data_dir>/cola/{in_domain_train,in_domain_dev,out_of_domain_dev}.tsv`` (no header; columns source,
  label, author mark, sentence; read with quoting disabled as the data README says).
* Documents for sentence-order prediction: lists of consecutive sentences. ``wikitext2`` gives one document per
  paragraph line (headings dropped, ``@-@``-style separators undone, split by the same rule as
  :mod:`qe.data.corpora`); ``brown`` gives windows of ``window`` consecutive sentences of each Brown file
  (the files mark no paragraphs); ``txt`` gives blank-line separated paragraphs of a text file, split into
  sentences with :func:`qe.core.text.split_sentences`.

The classifiers' data module, :class:`~qe.hf.data.TextClassificationDataModule`, lives in :mod:`qe.hf.data` (shared
with the content aligner) and is exported here under its old name; :class:`MLMDataModule` is GRUEN's own.
"""
from __future__ import annotations

import csv
import random
import re
import zipfile
from pathlib import Path
from typing import Any, Sequence

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader

from qe.data.corpora import _join_tokens, wikitext_paragraphs
from qe.core.paths import require, resolve_data_dir
from qe.hf.data import ListDataset as _ListDataset
from qe.hf.data import TextClassificationDataModule  # noqa: F401  (its old home: configs and user code name it here)

COLA_FILES = {"train": "in_domain_train.tsv", "dev_in": "in_domain_dev.tsv", "dev_out": "out_of_domain_dev.tsv"}


def read_cola(split: str, data_dir: str | Path | None = None) -> tuple[list[str], list[int]]:
    """Sentences and labels (1 acceptable, 0 unacceptable) of a CoLA split: train, dev_in or dev_out."""
    if split not in COLA_FILES:
        raise ValueError(f"CoLA split {split!r}: choose one of {sorted(COLA_FILES)}")
    path = require(resolve_data_dir(data_dir) / "cola" / COLA_FILES[split], f"CoLA {split} ({COLA_FILES[split]})")
    sents, labels = [], []
    with open(path, encoding="utf-8", newline="") as f:
        for ln, row in enumerate(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE), 1):
            if len(row) != 4:
                raise ValueError(f"{path}:{ln}: expected 4 tab-separated columns, got {len(row)}")
            if row[1] not in ("0", "1"):
                raise ValueError(f"{path}:{ln}: label {row[1]!r} is not 0/1")
            sents.append(row[3])
            labels.append(int(row[1]))
    return sents, labels


def _wikitext_docs(path: Path) -> list[list[str]]:
    """WikiText paragraphs of at least two sentences (the SOP task needs a split point)."""
    return [para for para in wikitext_paragraphs(path) if len(para) >= 2]


def _brown_docs(zpath: Path, window: int) -> list[list[str]]:
    docs = []
    with zipfile.ZipFile(zpath) as z:
        for name in sorted(n for n in z.namelist() if re.fullmatch(r"brown/c[a-z]\d\d", n)):
            sents = []
            for line in z.read(name).decode("ascii").splitlines():
                toks = [t.rsplit("/", 1)[0] for t in line.split()]
                if toks:
                    sents.append(_join_tokens(toks))
            for i in range(0, len(sents) - 1, window):
                chunk = sents[i : i + window]
                if len(chunk) >= 2:
                    docs.append(chunk)
    return docs


def _txt_docs(path: Path) -> list[list[str]]:
    from qe.core.text import split_sentences

    files = sorted(path.rglob("*.txt")) if path.is_dir() else [path]
    docs = []
    for fp in files:
        for para in re.split(r"\n\s*\n", fp.read_text(encoding="utf-8")):
            sents = split_sentences(para)
            if len(sents) >= 2:
                docs.append(sents)
    return docs


def load_documents(specs: Sequence[dict[str, Any] | str], data_dir: str | Path | None = None) -> list[list[str]]:
    """Multi-sentence documents from the sources in ``specs`` (see module docstring)."""
    root = resolve_data_dir(data_dir)
    out: list[list[str]] = []
    for spec in specs or []:
        spec = {"name": spec} if isinstance(spec, str) else dict(spec)
        name = spec.get("name")
        if name in ("wikitext2", "wikitext-2"):
            split = spec.get("split", "valid")
            out += _wikitext_docs(require(root / "wikitext-2" / f"{split}.txt", f"WikiText-2 {split} split"))
        elif name == "brown":
            out += _brown_docs(require(root / "nltk_data" / "corpora" / "brown.zip", "NLTK Brown corpus"),
                               int(spec.get("window", 5)))
        elif name == "txt":
            p = Path(str(spec["path"])).expanduser()
            out += _txt_docs(require(p if p.is_absolute() or p.exists() else root / p, "text documents"))
        elif name == "inline":  # documents given in the config (tests, demos)
            out += [list(d) for d in spec["documents"] if len(d) >= 2]
        else:
            raise ValueError(f"unknown document source {name!r}; use wikitext2, brown, txt or inline")
    return out


def sop_pairs(docs: list[list[str]], seed: int = 0, both: bool = True) -> tuple[list[tuple[str, str]], list[int]]:
    """Sentence-order examples: one random split point per document into segments (A, B).

    Label 0 = original order (A, B), label 1 = swapped (B, A) (the ALBERT / HF ``sentence_order_label``
    convention). ``both=True`` emits both orders of each split (balanced); else one at random.
    """
    rng = random.Random(seed)
    pairs, labels = [], []
    for d in docs:
        i = rng.randint(1, len(d) - 1)
        a, b = " ".join(d[:i]), " ".join(d[i:])
        if both:
            pairs += [(a, b), (b, a)]
            labels += [0, 1]
        elif rng.random() < 0.5:
            pairs.append((a, b)); labels.append(0)
        else:
            pairs.append((b, a)); labels.append(1)
    return pairs, labels


class MLMDataModule(pl.LightningDataModule):
    """Sentences -> dynamically masked batches (``DataCollatorForLanguageModeling``, 15 % by default)."""

    def __init__(self, tokenizer, train: list[str], val: list[str], batch_size: int = 32, max_length: int = 64,
                 mlm_probability: float = 0.15, num_workers: int = 0, seed: int = 0):
        super().__init__()
        from transformers import DataCollatorForLanguageModeling

        self.tokenizer, self.train_s, self.val_s = tokenizer, train, val
        self.batch_size, self.max_length, self.num_workers, self.seed = batch_size, max_length, num_workers, seed
        self.collator = DataCollatorForLanguageModeling(tokenizer, mlm=True, mlm_probability=mlm_probability)

    def has_test(self) -> bool:
        return False

    def _collate(self, sents):
        enc = self.tokenizer(list(sents), truncation=True, max_length=self.max_length)
        feats = [{k: enc[k][i] for k in enc} for i in range(len(sents))]
        return dict(self.collator(feats))

    def train_dataloader(self):
        g = torch.Generator().manual_seed(self.seed)
        return DataLoader(_ListDataset(self.train_s), batch_size=self.batch_size, shuffle=True, generator=g,
                          collate_fn=self._collate, num_workers=self.num_workers)

    def val_dataloader(self):
        # fixed masks for validation: a seeded generator so val loss is comparable across epochs
        def collate(sents):
            state = torch.random.get_rng_state()
            torch.manual_seed(self.seed + len(sents))
            try:
                return self._collate(sents)
            finally:
                torch.random.set_rng_state(state)

        return DataLoader(_ListDataset(self.val_s), batch_size=self.batch_size, shuffle=False, collate_fn=collate,
                          num_workers=self.num_workers)
