"""Training speed of RatPred's cross-encoder on the real training instances of the zoo recipe ratpred-webnlg-cross.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/ratpred_cross_speed.py [--steps 20] [--precision 32-true]
        [--device cpu|cuda] [--json OUT]

Builds what the recipe's run builds (EMNLP17 transfer split, synthetic instances from EMNLP17 outputs and references
and the WebNLG train references; the WebNLG ratings are never read), tokenises every (MR, output) pair as training
does (lexical, ``[CLS] MR [SEP] output [SEP]``) and reports the pairs' length distribution; then times ``--steps``
optimizer steps (forward + backward + Adam, after two untimed steps) of the recipe's module (all-MiniLM-L6-v2, batch
32) on batches from the recipe's own length-bucketed sampler, and one scoring pass over the dev part, and
extrapolates the recipe's CPU schedule: stage-1 steps + stage-2 steps at the measured seconds per step, dev
scoring after every pass, data building and tokenisation. Wall and process CPU seconds are both reported (the
machine is shared: CPU seconds are the stabler figure). ``--precision bf16-mixed`` times the steps under bfloat16
autocast. ``--device cuda`` times the same steps on the GPU (the projection then is the recipe's schedule at GPU
speed; the data building and tokenisation stay CPU work); ``--json`` also writes every printed record to a file.
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--precision", default="32-true", choices=["32-true", "bf16-mixed"])
    ap.add_argument("--recipe", default="ratpred-webnlg-cross")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--json", default=None, help="also write the results to this file")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    out: dict = {"device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu", "torch": torch.__version__}

    def emit(d: dict) -> None:
        out.update(d)
        print(json.dumps(d), flush=True)

    from hydra import compose, initialize_config_dir

    from qe.core.config import to_dict
    from qe.data.datasets import load_dataset
    from qe.ratpred.data import LengthBucketSampler, build_training_set, make_loader, real_instances, reference_pool
    from qe.ratpred.synth import ERROR_TYPES
    from qe.ratpred.fitting import build_module, input_delex
    from qe.ratpred.protocol import splits, target_records
    from qe.ratpred.model import Vocab
    from qe.zoo import build as zoo

    recipe = zoo.get_recipe(args.recipe)
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=zoo.recipe_overrides(recipe, Path("/tmp")))
    proto = to_dict(cfg.protocol)
    t0 = time.perf_counter()
    records = load_dataset(cfg.data.dataset, data_dir=cfg.paths.data_dir)
    _, train, dev, test = splits(cfg, records)[0]
    target = target_records(cfg)
    orig, extra, counts = build_training_set(
        train, test, tuple(proto["sources"]), target=str(cfg.data.target), max_errors=int(proto["max_errors"]),
        seed=1000, ref_pool=reference_pool(cfg.paths.data_dir), delex=bool(proto.get("delex", True)),
        target_data=target, error_types=tuple(proto.get("error_types") or ERROR_TYPES),
        penalties=proto.get("error_penalties") or None)
    t_data = time.perf_counter() - t0
    dev_i = real_instances(dev, str(cfg.data.target))
    emit({"instances": counts["total"], "original": counts["original"], "dev": len(dev_i),
          "data_seconds": round(t_data, 1)})

    vocab = Vocab([])
    module = build_module(cfg.model, vocab, [i.rating for i in orig], proto)
    pairs_tok = module.sentence_vectors()
    delex = input_delex(cfg.model, proto)
    t0 = time.perf_counter()
    loader = make_loader(orig + extra, vocab, delex, int(cfg.model.batch_size), True, seed=1, sent=pairs_tok)
    t_tok = time.perf_counter() - t0
    lengths = np.array([len(p[0]) for p in loader.dataset.columns[3]])
    emit({"tokenise_seconds": round(t_tok, 1), "pair_pieces": {
        "mean": round(float(lengths.mean()), 1), "p50": int(np.percentile(lengths, 50)),
        "p95": int(np.percentile(lengths, 95)), "max": int(lengths.max()),
        "truncated": int(pairs_tok.truncated)}})
    assert isinstance(loader.batch_sampler, LengthBucketSampler)

    opt_conf = module.configure_optimizers()
    opt = opt_conf["optimizer"] if isinstance(opt_conf, dict) else opt_conf
    module.to(dev).train()
    bf16 = args.precision == "bf16-mixed"

    def on_dev(batch):
        return {k: v.to(dev, non_blocking=True) if torch.is_tensor(v) else v for k, v in batch.items()}

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    it = iter(loader)
    times, cpus, sizes = [], [], []
    for k in range(args.steps + 2):
        batch = on_dev(next(it))
        sync()
        t, c = time.perf_counter(), time.process_time()
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
            pred = module(batch)
        loss = torch.nn.functional.mse_loss(pred.float(), batch["y"])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sync()
        if k >= 2:
            times.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
            sizes.append(int(batch["pair"].numel()))
    s_step, c_step = float(np.mean(times)), float(np.mean(cpus))

    module.eval()
    dev_loader = make_loader(dev_i, vocab, delex, 256, False, sent=pairs_tok)
    t, c = time.perf_counter(), time.process_time()
    with torch.no_grad():
        for b in dev_loader:
            module(on_dev(b))
    sync()
    t_dev, c_dev = time.perf_counter() - t, time.process_time() - c

    # the recipe's schedule: stage 1 = passes_synth passes of limit_train_batches steps (each followed by a dev pass);
    # stage 2 = passes_orig passes over the original instances (each followed by a dev pass)
    bs = int(cfg.model.batch_size)
    limit = cfg.trainer.get("limit_train_batches")
    steps1 = int(proto["passes_synth"]) * min(len(loader), int(limit) if limit and limit > 1 else len(loader))
    steps2 = int(proto["passes_orig"]) * int(np.ceil(len(orig) / bs))
    evals = int(proto["passes_synth"]) + int(proto["passes_orig"])
    # stage-2 batches are EMNLP17 pairs, shorter than the mixed stage-1 batches: scale by their mean length
    orig_len = float(np.mean(lengths[:len(orig)]))
    total_wall = (steps1 + steps2 * orig_len / lengths.mean()) * s_step + evals * t_dev + t_data + t_tok
    total_cpu = (steps1 + steps2 * orig_len / lengths.mean()) * c_step + evals * c_dev + t_data + t_tok
    emit({"steps_timed": args.steps, "batch_size": bs, "precision": args.precision,
          "seconds_per_step": round(s_step, 3), "cpu_seconds_per_step": round(c_step, 3),
          "mean_padded_pieces_per_batch": round(float(np.mean(sizes)), 1),
          "dev_pass_seconds": round(t_dev, 1), "dev_pass_cpu_seconds": round(c_dev, 1),
          "stage1_steps": steps1, "stage2_steps": steps2, "dev_passes": evals,
          "projected_build_seconds_wall": round(total_wall), "projected_build_seconds_cpu": round(total_cpu)})
    print(f"threads={args.threads} torch={torch.__version__} cpu={platform.processor() or platform.machine()}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
