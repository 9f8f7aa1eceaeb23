"""Throughput of the SLOR LM: training tokens/s through Lightning and scoring sentences/s.

    python benchmarks/lm_throughput.py                       # 2x512 LSTM, 16k units, GPU when present
    python benchmarks/lm_throughput.py --device cpu --train-batches 20 --score-sentences 2000
    python benchmarks/lm_throughput.py --batch-tokens 32768 --skip-score   # trainer=gpu's token-budget batches

Synthetic data with realistic shape (random ids; sentence lengths drawn like EMNLP17/Brown, mean ~16 units):
speed does not depend on the values. Training goes through the same LanguageModelModule, bucketed
DataLoader and Lightning Trainer as train.py; scoring through the exported-model scorer (qe.load).
Prints a table and where the time goes (torch profiler top ops for a few steps with --profile).
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import sys

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing


def synthetic_lengths(n: int, seed: int = 0, mean: float = 16.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(rng.gamma(4.0, mean / 4.0, size=n).round().astype(int), 2, 120)


class _SynthTok:
    """Stand-in tokenizer: the data module only needs ids and special ids."""

    pad_id, unk_id, bos_id, eos_id = 0, 1, 2, 3

    def __init__(self, vocab):
        self.vocab_size = vocab


def bench_training(args) -> dict:
    import lightning.pytorch as pl

    from qe.lm.data import EncodedSentences, LMDataModule
    from qe.lm.task import LanguageModelModule, TokenThroughput

    rng = np.random.default_rng(0)
    # --batch-tokens: enough sentences for train_batches budgets (mean length ~16 + 1)
    per_batch = args.batch_tokens // 17 + 1 if args.batch_tokens else args.batch_size
    lens = synthetic_lengths(args.train_batches * per_batch + per_batch, 1)
    ids = [rng.integers(4, args.vocab, size=L) for L in lens]
    dm = LMDataModule(_SynthTok(args.vocab), [], [], batch_size=args.batch_size, num_workers=args.workers,
                      max_tokens=args.batch_tokens)
    dm.data = {"train": EncodedSentences(ids), "val": EncodedSentences(ids[: args.batch_size]),
               "test": EncodedSentences([])}
    module = LanguageModelModule(vocab_size=args.vocab, pad_id=0, embedding_dim=args.hidden, hidden_size=args.hidden,
                                 num_layers=args.layers, dropout=0.2, tie_weights=True, lr=1e-3)
    if args.compile:
        module.model.lstm = module.model.lstm  # cuDNN LSTM already fused; compile the rest
        module.model = torch.compile(module.model)
    tp = TokenThroughput()
    gpu = args.device != "cpu" and torch.cuda.is_available()
    trainer = pl.Trainer(accelerator="gpu" if gpu else "cpu", devices=1, precision=args.precision if gpu else "32-true",
                         max_epochs=1, limit_train_batches=args.train_batches, limit_val_batches=0,
                         logger=False, enable_checkpointing=False, enable_progress_bar=False, callbacks=[tp],
                         use_distributed_sampler=False, enable_model_summary=False)
    # warm-up epoch then the measured one
    trainer.fit(module, datamodule=dm)
    warm = tp.last_tokens_per_sec
    trainer = pl.Trainer(accelerator="gpu" if gpu else "cpu", devices=1, precision=args.precision if gpu else "32-true",
                         max_epochs=1, limit_train_batches=args.train_batches, limit_val_batches=0, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, callbacks=[tp],
                         use_distributed_sampler=False, enable_model_summary=False)
    trainer.fit(module, datamodule=dm)
    return {"train_tokens_per_sec": round(tp.last_tokens_per_sec), "warmup_tokens_per_sec": round(warm),
            "batch_size": None if args.batch_tokens else args.batch_size, "batch_tokens": args.batch_tokens,
            "train_sentences_per_batch": round(len(ids) / max(1, len(dm.train_dataloader())), 1),
            "precision": args.precision if gpu else "32-true"}


def bench_scoring(args) -> dict:
    import qe
    from qe.lm import format as lm_format
    from qe.lm.model import LSTMLM
    from qe.core.tokenization import SPECIALS, WordTokenizer

    # a word tokenizer whose vocabulary is w0..wN: sentences of random "words" map to real ids
    itos = list(SPECIALS) + [f"w{i}" for i in range(args.vocab - 4)]
    tok = WordTokenizer(itos)
    cfg = dict(vocab_size=args.vocab, embedding_dim=args.hidden, hidden_size=args.hidden, num_layers=args.layers,
               dropout=0.0, tie_weights=True, pad_id=0)
    rng = np.random.default_rng(0)
    lens = synthetic_lengths(args.score_sentences, 2)
    sents = [" ".join(f"w{i}" for i in rng.integers(0, args.vocab - 4, size=L)) for L in lens]
    with tempfile.TemporaryDirectory() as d:
        export = lm_format.save(Path(d) / "lm", LSTMLM(**cfg), tok, np.full(args.vocab, -10.0), cfg)
        dev = "cuda" if args.device != "cpu" and torch.cuda.is_available() else "cpu"
        sc = qe.load(export, device=dev, precision=args.score_precision, max_tokens=args.max_tokens)
        sc.score(sents[: min(2000, len(sents))], progress=False)  # warm-up
        t0 = time.perf_counter()
        ids = sc.tokenizer.encode_batch(sents)
        t_tok = time.perf_counter() - t0
        t0 = time.perf_counter()
        sc.score(sents, progress=False)
        total = time.perf_counter() - t0
    return {"score_sentences_per_sec": round(len(sents) / total), "tokenize_share": round(t_tok / total, 3),
            "score_precision": sc.precision, "max_tokens": sc.max_tokens, "sentences": len(sents),
            "mean_len": float(np.mean(lens))}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="auto")
    p.add_argument("--vocab", type=int, default=16000)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--batch-tokens", type=int, default=None,
                   help="token-budget training batches of at most this many padded tokens (instead of --batch-size)")
    p.add_argument("--train-batches", type=int, default=200)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--precision", default="bf16-mixed")
    p.add_argument("--score-precision", default="bf16")
    p.add_argument("--max-tokens", type=int, default=None)
    p.add_argument("--score-sentences", type=int, default=100_000)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--skip-train", action="store_true")
    p.add_argument("--skip-score", action="store_true")
    p.add_argument("--json", default=None, help="also write results to this file")
    args = p.parse_args()
    dev = torch.cuda.get_device_name(0) if (args.device != "cpu" and torch.cuda.is_available()) else "cpu"
    res = {"device": dev, "torch": torch.__version__, "threads": torch.get_num_threads(),
           "model": f"{args.layers}x{args.hidden} LSTM, V={args.vocab}"}
    if not args.skip_train:
        res.update(bench_training(args))
    if not args.skip_score:
        res.update(bench_scoring(args))
    w = max(len(k) for k in res)
    for k, v in res.items():
        print(f"{k:<{w}}  {v}")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
