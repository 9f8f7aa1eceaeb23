"""Full vs adaptive softmax output layer: training tokens/s and validation perplexity at an equal budget.

    python benchmarks/lm_output_layer.py --minutes 3                   # Brown + WikiText-2, 16k SentencePiece, 2x512
    python benchmarks/lm_output_layer.py --steps 200 --variants full adaptive
    python benchmarks/lm_output_layer.py --cpu-minutes 5               # budget in process CPU time instead of wall
    python benchmarks/lm_output_layer.py --cpu-minutes 4 --set hidden_size=256 --set embedding_dim=256   # zoo's 2x256

Data: conf/data/lm_brown_wt2.yaml (Brown + WikiText-2 valid, 2 % held out for validation; needs /work/shared/data or
$QE_DATA_DIR), tokenizer conf/tokenizer/sp.yaml (16k SentencePiece units, trained once and cached under --cache).
Model: conf/model/lstm_lm.yaml (2x512, tied full softmax) against conf/model/lstm_lm_adaptive.yaml (same LSTM,
adaptive softmax over the model's own frequency order). Both train from the same seed on the same bucketed batch
order (qe.lm.data.LMDataModule) with the module's own optimiser (Adam, lr 1e-3), in a plain loop so the budget is
exact: ``--steps`` (the reproducible budget), ``--minutes`` (wall clock) or ``--cpu-minutes`` (process CPU time,
less sensitive to other load on the machine; a busy machine still slows both). Validation perplexity (per token,
``</s>`` included) on the first ``--val-sentences`` held-out sentences is measured after the budget, outside it.
Reported per variant: steps, target tokens, wall and CPU seconds, tokens per wall second and per CPU second, and
validation perplexity. Rerun on an idle machine for figures to quote.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing


def load_yaml(path: Path) -> dict:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.load(path), resolve=True)


def model_options(name: str) -> dict:
    node = load_yaml(REPO / "conf" / "model" / f"{name}.yaml")
    for parent in node.pop("defaults", []) or []:
        if parent != "_self_":
            node = {**model_options(parent), **node}
    return {k: v for k, v in node.items() if not k.startswith("_")}


def data(args):
    from qe.data.corpora import load_corpus, split_holdout
    from qe.lm.data import LMDataModule
    from qe.core.tokenization import load_tokenizer, train_tokenizer

    d = load_yaml(REPO / "conf" / "data" / f"{args.data}.yaml")
    train_all = load_corpus(d["train"], args.data_dir)
    train, held = split_holdout(train_all, float(d.get("val_fraction", 0.0)), seed=args.seed)
    val = (load_corpus(d["val"], args.data_dir) if d.get("val") else []) + held
    tok_cfg = load_yaml(REPO / "conf" / "tokenizer" / f"{args.tokenizer}.yaml")
    if args.vocab_size:
        tok_cfg["vocab_size"] = args.vocab_size
    cache = Path(args.cache) / f"{args.data}-{args.tokenizer}-{tok_cfg.get('vocab_size', tok_cfg.get('max_size'))}"
    if (cache / "tokenizer.json").is_file():
        tok = load_tokenizer(cache)
    else:
        t0 = time.perf_counter()
        tok = train_tokenizer(tok_cfg, train)
        cache.mkdir(parents=True, exist_ok=True)
        tok.save(cache)
        print(f"tokenizer trained in {time.perf_counter() - t0:.0f} s -> {cache}", flush=True)
    dm = LMDataModule(tok, train, val[: args.val_sentences], batch_size=args.batch_size,
                      bucket_batches=int(d.get("bucket_batches", 50)), max_length=d.get("max_length"),
                      num_workers=0, seed=args.seed)
    dm.setup("fit")
    return tok, dm


def vocab_order_report(counts: torch.Tensor, cutoffs: list[int]) -> dict:
    """How much of the training targets the first ``cutoffs[0]`` ids cover in the tokenizer's order vs by frequency."""
    total = float(counts.sum())
    by_id = float(counts[: cutoffs[0]].sum()) / total
    by_freq = float(torch.sort(counts, descending=True).values[: cutoffs[0]].sum()) / total
    ranks = torch.argsort(torch.argsort(-counts, stable=True), stable=True).double()
    ids = torch.arange(len(counts), dtype=torch.float64)
    spearman = float(torch.corrcoef(torch.stack([ranks, ids]))[0, 1])
    return {"head_coverage_tokenizer_order": round(by_id, 4), "head_coverage_frequency_order": round(by_freq, 4),
            "spearman_id_vs_frequency_rank": round(spearman, 4)}


@torch.no_grad()
def perplexity(model, loader) -> float:
    model.eval()
    nll, n = 0.0, 0
    for b in loader:
        s, k = model.loss(b["inp"], b["tgt"])
        nll += float(s)
        n += int(k)
    model.train()
    return math.exp(nll / max(n, 1))


def run_variant(name: str, args, tok, dm, counts) -> dict:
    from qe.lm.task import LanguageModelModule

    torch.manual_seed(args.seed)
    opts = {**model_options(name), **args.model_overrides}
    module = LanguageModelModule(vocab_size=tok.vocab_size, pad_id=tok.pad_id, **opts)
    module.model.set_output_order(counts)
    model = module.model.train()
    opt = module.configure_optimizers()
    steps = tokens = 0
    wall = cpu = 0.0
    done = False
    epoch = 0
    while not done:
        loader = dm.train_dataloader()
        loader.batch_sampler.set_epoch(epoch)
        for batch in loader:
            t0, c0 = time.perf_counter(), time.process_time()
            nll, n = model.loss(batch["inp"], batch["tgt"])
            opt.zero_grad(set_to_none=True)
            (nll / n.clamp(min=1)).backward()
            opt.step()
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
            steps += 1
            tokens += int(n)
            if args.log_every and steps % args.log_every == 0:
                print(f"  {name}: step {steps}, {tokens / wall:.0f} tok/s wall, loss {float(nll / n):.3f}", flush=True)
            if ((args.steps and steps >= args.steps) or (args.minutes and wall >= 60 * args.minutes)
                    or (args.cpu_minutes and cpu >= 60 * args.cpu_minutes)):
                done = True
                break
        epoch += 1
    t0 = time.perf_counter()
    ppl = perplexity(model, dm.val_dataloader())
    n_params = sum(p.numel() for p in model.parameters())
    return {"variant": name, "output_layer": opts.get("output_layer", "full"), "params": n_params, "steps": steps,
            "tokens": tokens, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "tokens_per_wall_s": round(tokens / wall, 1), "tokens_per_cpu_s": round(tokens / cpu, 1),
            "val_ppl": round(ppl, 2), "eval_s": round(time.perf_counter() - t0, 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variants", nargs="+", default=["lstm_lm", "lstm_lm_adaptive"],
                   help="model configs (conf/model/NAME.yaml)")
    p.add_argument("--data", default="lm_brown_wt2")
    p.add_argument("--data-dir", default=None, help="default: $QE_DATA_DIR or the shared data folder")
    p.add_argument("--tokenizer", default="sp")
    p.add_argument("--vocab-size", type=int, default=None)
    p.add_argument("--cache", default=str(Path.home() / ".cache" / "qe" / "bench"))
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=0, help="budget in optimiser steps (reproducible)")
    p.add_argument("--minutes", type=float, default=0.0, help="budget in wall-clock minutes of training steps")
    p.add_argument("--cpu-minutes", type=float, default=0.0, help="budget in process CPU minutes of training steps")
    p.add_argument("--val-sentences", type=int, default=1000)
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--log-every", type=int, default=0)
    p.add_argument("--json", default=None)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="model option for every variant, e.g. --set hidden_size=256 --set embedding_dim=256 "
                        "(the zoo LMs' 2x256 network)")
    args = p.parse_args()
    import yaml

    args.model_overrides = {}
    for kv in args.set:
        key, sep, value = kv.partition("=")
        if not sep or not key:
            p.error(f"--set {kv!r}: expected KEY=VALUE")
        args.model_overrides[key.strip()] = yaml.safe_load(value)
    if not (args.steps or args.minutes or args.cpu_minutes):
        args.steps = 100
    if args.threads:
        torch.set_num_threads(args.threads)
    from qe.lm.task import target_counts

    tok, dm = data(args)
    counts = target_counts(dm)
    adaptive = [model_options(v) for v in args.variants if model_options(v).get("output_layer") == "adaptive"]
    from qe.lm.model import effective_cutoffs

    cut = effective_cutoffs(adaptive[0].get("adaptive_cutoffs") if adaptive else None, tok.vocab_size)
    info = {"torch": torch.__version__, "threads": torch.get_num_threads(), "vocab": tok.vocab_size,
            "tokenizer": tok.type, "train_sentences": len(dm.data["train"]), "val_sentences": len(dm.data["val"]),
            "batch_size": args.batch_size, "model_overrides": args.model_overrides, "budget": {"steps": args.steps, "minutes": args.minutes,
                                                      "cpu_minutes": args.cpu_minutes},
            "cutoffs": cut, **vocab_order_report(counts, cut)}
    print(json.dumps(info), flush=True)
    rows = []
    for v in args.variants:
        rows.append(run_variant(v, args, tok, dm, counts))
        print(json.dumps(rows[-1]), flush=True)
    keys = ["variant", "steps", "tokens", "wall_s", "cpu_s", "tokens_per_wall_s", "tokens_per_cpu_s", "val_ppl"]
    print("\n" + " | ".join(keys))
    for r in rows:
        print(" | ".join(str(r[k]) for k in keys))
    if len(rows) >= 2:
        base = rows[0]
        for r in rows[1:]:
            print(f"{r['variant']} vs {base['variant']}: x{r['tokens_per_wall_s'] / base['tokens_per_wall_s']:.2f} "
                  f"tokens/wall-s, x{r['tokens_per_cpu_s'] / base['tokens_per_cpu_s']:.2f} tokens/CPU-s, "
                  f"val ppl {r['val_ppl']} vs {base['val_ppl']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"info": info, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
