"""Time to a target perplexity: the LM at 128-sentence batches against trainer=gpu's token-budget batches, each
trained on the same number of training tokens.

    PYTHONPATH=. python benchmarks/lm_time_to_ppl.py                 # GPU: Brown + WikiText-2, SP 16k, 2 x 512, bf16
    PYTHONPATH=. python benchmarks/lm_time_to_ppl.py --tokens 5e6    # shorter
    PYTHONPATH=. python benchmarks/lm_time_to_ppl.py --smoke         # CPU, embedded sample corpus, tiny LM, ~1 min

Two runs, built by the LM task itself (qe.lm.task.build, as ``qe train`` builds them), same seed, data, tokenizer,
model and precision:

* ``sentences``: ``trainer=gpu ~lm_gpu``: ``data.batch_size`` sentences per batch (128 for Brown + WikiText-2) and
  the model's learning rate (the CPU recipes' batching, on the GPU);
* ``gpu_default``: ``trainer=gpu``: batches of ``lm_gpu.max_tokens`` padded tokens and the learning rate of the
  ``lm_gpu.lr_scaling`` rule (conf/trainer/gpu.yaml: 8,192 tokens and the linear rule, chosen with this script);
* one more run per ``--variant NAME=OV;OV...`` (``trainer=gpu`` plus those overrides; ``tokens=N`` gives it its own
  token count, e.g. for runs of equal wall time).

Each trains for ``ceil(tokens / mean target tokens per batch)`` steps, so both see about ``--tokens`` training
tokens (targets, ``</s>`` included), validates ``--evals`` times on the way and once at the end, and reports the
final validation perplexity, the training wall time (validation excluded), tokens/s, and the training time at which
validation perplexity first reached the target: ``--target-ppl``, by default the ``sentences`` run's final
perplexity (so the ``gpu_default`` figure says how much sooner, if at all, the GPU default reaches the quality the
128-sentence run ends with). Validation perplexity does not depend on batching (summed NLL / tokens).

``--smoke`` runs both on CPU (trainer=gpu with ``trainer.accelerator=cpu``, fp32) on the embedded sample corpus
with a 32-unit LSTM, 32-sentence reference batches against 1,024-token budgets: it checks the script, not the GPU.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

GPU_BASE = ["data=lm_brown_wt2", "tokenizer=sp", "model=lstm_lm", "data.num_workers=4"]
SMOKE_BASE = ["data=lm_sample", "model=lstm_lm_small", "model.hidden_size=32", "model.embedding_dim=32",
              "trainer.accelerator=cpu", "trainer.precision=32-true", "lm_gpu.max_tokens=1024", "lm_gpu.num_workers=0"]
RUNS = {"sentences": ["~lm_gpu"], "gpu_default": []}


def _curve_callback():
    import lightning.pytorch as pl

    class Curve(pl.Callback):
        """Training seconds (validation excluded), target tokens seen and val/ppl at every validation."""

        def __init__(self):
            self.t0 = self.tv = None
            self.val_s = 0.0
            self.tokens = 0
            self.points: list[dict] = []

        def _sync(self, pl_module):
            import torch

            if pl_module.device.type == "cuda":
                torch.cuda.synchronize(pl_module.device)

        def on_train_start(self, trainer, pl_module):
            self._sync(pl_module)
            self.t0 = time.perf_counter()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self.tokens += int(batch["ntokens"])

        def on_validation_start(self, trainer, pl_module):
            self._sync(pl_module)
            self.tv = time.perf_counter()

        def on_validation_end(self, trainer, pl_module):
            if trainer.sanity_checking or self.t0 is None or trainer.state.fn != "fit":
                return
            now = time.perf_counter()
            self.val_s += now - self.tv
            self.points.append({"step": trainer.global_step, "tokens": self.tokens,
                                "train_seconds": round(now - self.t0 - self.val_s, 3),
                                "val_ppl": float(trainer.callback_metrics["val/ppl"])})

        def train_seconds(self) -> float:
            return time.perf_counter() - self.t0 - self.val_s

    return Curve()


def run_one(name: str, overrides: list[str], tokens: float, evals: int, work: Path) -> dict:
    import lightning.pytorch as pl
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from qe.lm.task import build
    from qe.training import quiet_console, set_matmul_precision

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=["trainer=gpu", "logger=none", f"paths.output_dir={work}",
                                          f"paths.root_dir={work}", *overrides])
    quiet_console()
    set_matmul_precision(cfg)
    pl.seed_everything(int(cfg.seed), workers=True)
    parts = build(cfg)
    dm, module = parts.datamodule, parts.module
    stats = dm.train_batch_stats()
    steps = max(1, math.ceil(tokens / stats["tokens_per_batch"]))
    curve = _curve_callback()
    trainer = pl.Trainer(accelerator=cfg.trainer.accelerator, devices=1, precision=cfg.trainer.precision,
                         max_steps=steps, max_epochs=-1, val_check_interval=max(1, steps // max(1, evals)),
                         check_val_every_n_epoch=None, gradient_clip_val=cfg.trainer.gradient_clip_val,
                         num_sanity_val_steps=0, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, use_distributed_sampler=False, callbacks=[curve])
    trainer.fit(module, datamodule=dm)
    train_s = curve.train_seconds()
    final = trainer.validate(module, datamodule=dm, verbose=False)[0]
    return {"name": name, "overrides": overrides, "device": str(module.device), "precision": cfg.trainer.precision,
            "max_tokens": dm.max_tokens, "batch_size": None if dm.max_tokens else dm.batch_size,
            "sentences_per_batch": round(stats["sentences_per_batch"], 1), "lr": float(module.hparams.lr),
            "steps": trainer.global_step, "train_tokens": curve.tokens, "train_seconds": round(train_s, 2),
            "tokens_per_s": round(curve.tokens / train_s) if train_s > 0 else None,
            "val_ppl": float(final["val/ppl"]), "curve": curve.points}


def time_to(points: list[dict], final: dict, target: float) -> float | None:
    for p in points + [{"train_seconds": final["train_seconds"], "val_ppl": final["val_ppl"]}]:
        if p["val_ppl"] <= target:
            return p["train_seconds"]
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="CPU, embedded sample corpus, tiny LM (checks the script)")
    ap.add_argument("--tokens", type=float, default=None, help="training tokens per run (GPU 1e7, smoke 6e4)")
    ap.add_argument("--evals", type=int, default=5, help="validations during each run (plus one at the end)")
    ap.add_argument("--target-ppl", type=float, default=None,
                    help="default: the final validation perplexity of the 128-sentence run")
    ap.add_argument("--json", default=None, help="also write the results to this file")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=OV[;OV...]",
                    help="one more run against the 128-sentence one, trainer=gpu plus these overrides separated by "
                         "';' (tokens=N sets its own token count: 'equal time' runs), e.g. "
                         "'linear16k=lm_gpu.max_tokens=16384;lm_gpu.lr_scaling=linear'")
    ap.add_argument("overrides", nargs="*", help="more Hydra overrides for both runs (model.hidden_size=256 ...)")
    a = ap.parse_args()
    import torch

    if not a.smoke and not torch.cuda.is_available():
        sys.exit("lm_time_to_ppl: no CUDA device here; --smoke runs the script on CPU")
    tokens = a.tokens or (6e4 if a.smoke else 1e7)
    base = (SMOKE_BASE if a.smoke else GPU_BASE) + list(a.overrides)
    work = Path(tempfile.mkdtemp(prefix="lm-ttp-"))  # one folder: the tokenizer is trained once, for both runs
    res = {"smoke": a.smoke, "tokens": tokens, "base_overrides": base, "torch": torch.__version__,
           "device": torch.cuda.get_device_name(0) if not a.smoke else "cpu", "runs": {}}
    runs = {name: (extra, tokens) for name, extra in RUNS.items()}
    for spec in a.variant:
        name, _, ovs = spec.partition("=")
        extra, n = [], tokens
        for ov in filter(None, ovs.split(";")):
            if ov.startswith("tokens="):
                n = float(ov.split("=", 1)[1])
            else:
                extra.append(ov)
        runs[name] = (extra, n)
    for name, (extra, n) in runs.items():
        r = run_one(name, base + extra, n, a.evals, work)
        res["runs"][name] = r
        print(f"{name:12s} ppl {r['val_ppl']:8.2f}  {r['train_seconds']:8.1f} s  {r['tokens_per_s'] or 0:10.0f} tok/s"
              f"  {r['steps']:6d} steps of ~{r['sentences_per_batch']} sentences, lr {r['lr']:.3g}", flush=True)
    ref, gpu = res["runs"]["sentences"], res["runs"]["gpu_default"]
    target = a.target_ppl or ref["val_ppl"]
    res["target_ppl"] = target
    for r in (ref, gpu):
        r["time_to_target_s"] = time_to(r["curve"], r, target)
    for name in list(res["runs"])[2:]:
        v = res["runs"][name]
        v["time_to_target_s"] = time_to(v["curve"], v, target)
        print(f"  {name}: time to target {v['time_to_target_s']} s, final ppl ratio {v['val_ppl'] / ref['val_ppl']:.3f}")
    res["ppl_ratio_gpu_default_over_sentences"] = gpu["val_ppl"] / ref["val_ppl"]
    res["no_worse"] = gpu["val_ppl"] <= ref["val_ppl"]
    res["speedup_time_to_target"] = (ref["time_to_target_s"] / gpu["time_to_target_s"]
                                     if ref["time_to_target_s"] and gpu["time_to_target_s"] else None)
    print(f"target ppl {target:.2f}: sentences {ref['time_to_target_s']} s, gpu_default {gpu['time_to_target_s']} s;"
          f" final ppl ratio (gpu_default / sentences) {res['ppl_ratio_gpu_default_over_sentences']:.3f}"
          + ("  [smoke: CPU, says nothing about a GPU]" if a.smoke else ""))
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
