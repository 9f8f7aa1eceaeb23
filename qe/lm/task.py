"""``task=lm``: build tokenizer, data and LSTM LM from the config; export kind ``slor``."""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from qe.data.corpora import corpus_fingerprint, load_corpus, split_holdout
from qe.export import export_writer
from qe.lm.datamodule import LMDataModule
from qe.lm.module import LanguageModelModule, TokenThroughput
from qe.tokenization import Tokenizer, load_tokenizer, train_tokenizer
from qe.training import TaskParts, plain_config

log = logging.getLogger(__name__)

EXPORT_KIND = "slor"
UNIGRAM_FILE = "unigram.safetensors"
MODEL_FILE = "model.safetensors"


def unigram_logprobs(ids: list[np.ndarray], vocab_size: int, specials: tuple[int, ...] = (0, 2, 3)) -> tuple[np.ndarray, dict]:
    """Add-one smoothed unigram log-probabilities over the training tokens (same units as the LM).

    p(t) = (c(t) + 1) / (N + |V'|), where N counts training tokens (``<unk>`` included, boundary symbols not) and
    V' is the vocabulary without pad/bos/eos. Boundary and pad symbols get -inf (they never occur inside S).
    """
    counts = np.bincount(np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64), minlength=vocab_size)
    counts = counts.astype(np.float64)
    mask = np.ones(vocab_size, dtype=bool)
    mask[list(specials)] = False
    counts[~mask] = 0.0
    n, v = counts.sum(), mask.sum()
    logp = np.full(vocab_size, -np.inf)
    logp[mask] = np.log(counts[mask] + 1.0) - math.log(n + v)
    return logp, {"tokens": int(n), "types_seen": int((counts > 0).sum()), "smoothing": "add-one"}


def _cached_tokenizer(cfg: DictConfig, sentences: list[str]) -> Tokenizer:
    """Rank 0 trains the tokenizer before DDP workers start; workers (same Hydra run dir) load it."""
    tok_cfg = OmegaConf.to_container(cfg.tokenizer, resolve=True)
    key = corpus_fingerprint(sentences)[:16] + "-" + hashlib.sha256(json.dumps(tok_cfg, sort_keys=True).encode()).hexdigest()[:12]
    cache = Path(cfg.paths.output_dir) / "tokenizer" / key
    if (cache / "tokenizer.json").is_file():
        return load_tokenizer(cache)
    tok = train_tokenizer(tok_cfg, sentences)
    if int(os.environ.get("LOCAL_RANK", "0")) == 0:
        tmp = cache.with_name(cache.name + f".tmp{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        tok.save(tmp)
        try:
            os.replace(tmp, cache)
        except OSError:
            pass
    return tok


def build(cfg: DictConfig) -> TaskParts:
    d = cfg.data
    train_all = load_corpus(OmegaConf.to_container(d.train, resolve=True), cfg.paths.data_dir)
    train, held = split_holdout(train_all, float(d.get("val_fraction", 0.0)), seed=int(cfg.seed))
    val = load_corpus(OmegaConf.to_container(d.val, resolve=True), cfg.paths.data_dir) if d.get("val") else []
    val = val + held
    test = load_corpus(OmegaConf.to_container(d.test, resolve=True), cfg.paths.data_dir) if d.get("test") else []
    if not train or not val:
        raise ValueError(f"LM data: {len(train)} training and {len(val)} validation sentences; need both > 0")
    tokenizer = _cached_tokenizer(cfg, train)
    dm = LMDataModule(tokenizer, train, val, test, batch_size=int(d.batch_size),
                      bucket_batches=int(d.get("bucket_batches", 50)), max_length=d.get("max_length"),
                      num_workers=int(d.get("num_workers", 0)), seed=int(cfg.seed))
    m = cfg.model
    module = LanguageModelModule(
        vocab_size=tokenizer.vocab_size, pad_id=tokenizer.pad_id, embedding_dim=int(m.embedding_dim),
        hidden_size=int(m.hidden_size), num_layers=int(m.num_layers), dropout=float(m.dropout),
        tie_weights=bool(m.tie_weights), lr=float(m.lr), weight_decay=float(m.get("weight_decay", 0.0)),
    )
    data_info = {"name": "+".join(_source_name(s) for s in d.train), "sha256": corpus_fingerprint(train),
                 "train_sentences": len(train), "val_sentences": len(val), "test_sentences": len(test)}
    return TaskParts(module=module, datamodule=dm, export=lambda *a: export_lm(*a, data_info=data_info),
                     callbacks=[TokenThroughput()], demo=demo)


def _source_name(s) -> str:
    s = dict(s)
    return s.get("name", "?") + (f"-{s['split']}" if s.get("split") else "") + (f":{s['path']}" if s.get("path") else "")


def export_lm(module: LanguageModelModule, dm: LMDataModule, dest: Path, metrics: dict, cfg: DictConfig,
              data_info: dict | None = None) -> Path:
    dm.setup("fit")
    tok = dm.tokenizer
    logp, uni_info = unigram_logprobs(dm.data["train"].ids, tok.vocab_size, (tok.pad_id, tok.bos_id, tok.eos_id))
    info = dict(data_info or {})
    info.update(dm.stats)
    keep = {k: v for k, v in metrics.items() if isinstance(v, (int, float))}
    return save_lm_export(dest, module.model, tok, logp, model_config=module.model_config(),
                          extra_config={"unigram": uni_info, "train": plain_config(cfg)}, data=info, metrics=keep)


def save_lm_export(dest: str | Path, model: torch.nn.Module, tokenizer: Tokenizer, unigram_logp: np.ndarray,
                   model_config: dict, extra_config: dict | None = None, data: dict | None = None,
                   metrics: dict | None = None) -> Path:
    """Write an export of kind ``slor``: weights, tokenizer and unigram log-probabilities (atomically)."""
    from safetensors.torch import save_file, save_model

    if len(unigram_logp) != tokenizer.vocab_size or model_config["vocab_size"] != tokenizer.vocab_size:
        raise ValueError("model, tokenizer and unigram table must share one vocabulary")
    model = model.float().cpu().eval()
    config = {"model": dict(model_config), "tokenizer": tokenizer.settings(), **(extra_config or {})}
    dest = Path(dest)
    with export_writer(dest, kind=EXPORT_KIND, config=config, data=data, metrics=metrics) as tmp:
        save_model(model, str(tmp / MODEL_FILE))
        save_file({"logprob": torch.as_tensor(np.asarray(unigram_logp), dtype=torch.float32)}, str(tmp / UNIGRAM_FILE))
        tokenizer.save(tmp)
    return dest.resolve()


def demo(export_path: Path, cfg: DictConfig) -> None:
    import qe

    sents = list(cfg.get("demo_sentences") or [])
    if not sents:
        return
    scorer = qe.load(export_path)
    comps = scorer.score_components(sents, progress=False)
    print(f"\n{scorer.signature}")
    print(f"{'SLOR':>8} {'NCE':>8} {'PPL':>10}  sentence")
    for i, s in enumerate(sents):
        print(f"{comps['slor'][i]:8.3f} {comps['nce'][i]:8.3f} {comps['ppl'][i]:10.2f}  {s}")
