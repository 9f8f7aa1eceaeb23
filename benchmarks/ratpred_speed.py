"""RatPred training speed for one cross-validation fold (setup S1 and the S4 synthetic stage).

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/ratpred_speed.py [--batch-sizes 20 50] [--epochs 1] [--json OUT]

Measures, on fold 0 of the EMNLP17 data, the wall time of Lightning training epochs (forward + backward +
Adam, dev evaluation included) for the paper's network (embedding 300, GRU 300, 2 tanh layers), and reports
instances per second (wall and process CPU time - the machine is shared, so CPU seconds are the stabler
figure) and the projected time of the paper's protocol for one fold (S1: 500 passes over the
original data; S4: 20 passes over ~45k instances + 500 over the original). Runs on GPU when one is present.
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from qe.data import load_dataset
from qe.ratpred.data import SETUPS, Instance, build_training_set, cv_fold, make_parts, reference_pool
from qe.ratpred.task import train_one


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[20, 50])
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--setups", nargs="+", default=["S1", "S4"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dim", type=int, default=300, help="embedding = GRU size (paper: 300)")
    ap.add_argument("--json", default=None, help="also write the rows and the machine to this file")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    recs = load_dataset("emnlp17_refs")
    train, dev, test = cv_fold(make_parts(recs), 0)
    pool = reference_pool()
    dev_i = [Instance(r.mr, r.output, r.ratings["quality"], "real", 0, r.id) for r in dev]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    rows = []
    for setup in args.setups:
        orig, extra, counts = build_training_set(train, test, SETUPS[setup], ref_pool=pool, seed=1)
        for bs in args.batch_sizes:
            model_cfg = dict(embedding_dim=args.dim, hidden_size=args.dim, tanh_layers=2, dropout=0.5, lr=1e-4,
                             batch_size=bs, round_to=0.5, clip=True)
            proto = dict(passes_synth=args.epochs if extra else 0, passes_orig=0 if extra else args.epochs)
            if not extra:
                proto["passes_orig"] = args.epochs
            t0, c0 = time.perf_counter(), time.process_time()
            _, _, info = train_one(orig, extra, dev_i, model_cfg, proto, 1)
            dt, cpu = time.perf_counter() - t0, time.process_time() - c0
            n = (len(orig) + len(extra)) * args.epochs
            ips = n / dt
            proj = (500 * len(orig) + (20 * (len(orig) + len(extra)) if extra else 0)) / ips
            rows.append({"setup": setup, "batch_size": bs, "instances": len(orig) + len(extra),
                         "epochs": args.epochs, "seconds": round(dt, 1), "cpu_seconds": round(cpu, 1),
                         "emb_hidden": args.dim, "instances_per_s": round(ips, 1),
                         "paper_protocol_one_fold_hours": round(proj / 3600, 2)})
            print(json.dumps(rows[-1]), flush=True)
    print(f"device={device} torch={torch.__version__} threads={args.threads} cpu={platform.processor() or platform.machine()}")
    if args.json:
        dev_name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
        Path(args.json).write_text(json.dumps({"device": dev_name, "torch": torch.__version__, "threads": args.threads,
                                               "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
