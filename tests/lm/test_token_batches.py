"""Token-budget batches (``data.max_tokens`` / ``lm_gpu.max_tokens``) and the learning-rate rule of ``trainer=gpu``,
checked on CPU: trainer=gpu's LM settings are built by the task, not by the device, so they run here with
``trainer.accelerator=cpu``."""
from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from qe.lm.data import BucketBatchSampler
from qe.lm.task import scaled_lr

REPO = Path(__file__).resolve().parents[2]
LENGTHS = np.random.default_rng(7).integers(1, 40, size=1000)


def _digest(**kw) -> str:
    out = []
    for shuffle in (True, False):
        for world, rank in ((1, 0), (2, 0), (2, 1)):
            s = BucketBatchSampler(LENGTHS, 16, 5, shuffle, 3, world, rank, **kw)
            for ep in (0, 1):
                s.set_epoch(ep)
                out += [list(s), len(s)]
    return hashlib.sha256(json.dumps(out).encode()).hexdigest()


def test_sentence_batches_are_unchanged():
    """The default (no budget) gives exactly the batches of the sampler before token budgets existed (digest taken
    from that version), so CPU runs, their checksums and the zoo's CPU builds stay as they were."""
    assert _digest() == "a77048162223716df69b98a133e9d45bbdbc4796a23e912ff2bf245dee213637"
    assert _digest(max_tokens=None) == _digest()


@pytest.mark.parametrize("shuffle", [True, False])
def test_token_batches_respect_the_budget_and_cover_the_epoch_once(shuffle):
    budget = 200
    s = BucketBatchSampler(LENGTHS, 16, 50, shuffle, seed=3, max_tokens=budget)
    batches = list(s)
    assert len(s) == len(batches)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(LENGTHS)))
    costs = [len(b) * (int(LENGTHS[b].max()) + 1) for b in batches]
    assert max(costs) <= budget
    # budgets, not sentence counts: short-sentence batches hold more rows, and batches are mostly full
    rows = [len(b) for b in batches]
    assert max(rows) > 30 and np.mean(costs) > 0.9 * budget
    # length bucketing: little padding
    assert sum(costs) < 1.05 * float((LENGTHS + 1).sum())


def test_token_batches_are_deterministic_per_epoch_and_shard_across_ranks():
    a = BucketBatchSampler(LENGTHS, 16, 5, True, seed=3, max_tokens=300)
    b = BucketBatchSampler(LENGTHS, 16, 5, True, seed=3, max_tokens=300)
    assert list(a) == list(b)
    b.set_epoch(1)
    assert list(a) != list(b)
    r0 = list(BucketBatchSampler(LENGTHS, 16, 5, True, 3, 2, 0, max_tokens=300))
    r1 = list(BucketBatchSampler(LENGTHS, 16, 5, True, 3, 2, 1, max_tokens=300))
    assert len(r0) == len(r1) > 0
    assert not {i for x in r0 for i in x} & {i for x in r1 for i in x}


def test_a_sentence_longer_than_the_budget_is_a_batch_of_its_own():
    s = BucketBatchSampler([50, 3, 3, 3], 2, 1, False, max_tokens=20)
    assert list(s)[0] == [0] and sorted(i for b in s for i in b) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="max_tokens"):
        BucketBatchSampler([3], 2, max_tokens=-5)


def test_lr_rule():
    assert scaled_lr(1e-3, 512, 128) == (pytest.approx(2e-3), pytest.approx(2.0))
    assert scaled_lr(1e-3, 128 * 100, 128)[1] == 4.0  # capped
    assert scaled_lr(1e-3, 128 * 100, 128, max_scale=2.0)[0] == pytest.approx(2e-3)
    assert scaled_lr(1e-3, 32, 128)[0] == pytest.approx(5e-4)  # smaller batches scale down
    assert scaled_lr(1e-3, 256, 128, "linear")[0] == pytest.approx(2e-3)
    assert scaled_lr(1e-3, 4096, 128, "none") == (1e-3, 1.0)
    with pytest.raises(ValueError, match="lr_scaling"):
        scaled_lr(1e-3, 256, 128, "cubic")


def _cfg(tmp_path, *extra):
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose("train", overrides=["data=lm_sample", "model=lstm_lm_small", "debug=fast", "logger=none",
                                           f"paths.output_dir={tmp_path}/run", f"paths.root_dir={tmp_path}",
                                           f"export_dir={tmp_path}/export", "demo_sentences=[]", *extra])


def test_trainer_gpu_sets_token_budget_workers_and_scaled_lr(tmp_path):
    from qe.lm.task import build

    cfg = _cfg(tmp_path, "trainer=gpu", "lm_gpu.max_tokens=2000")
    assert cfg.trainer.accelerator == "gpu" and cfg.trainer.precision == "bf16-mixed"
    parts = build(cfg)
    dm = parts.datamodule
    assert dm.max_tokens == 2000 and dm.num_workers == 4
    stats = dm.train_batch_stats()
    assert stats["padded_tokens_per_batch"] <= 2000
    # trainer=gpu's rule is linear (conf/trainer/gpu.yaml: chosen by time to perplexity on an H100), capped at x4
    want = cfg.model.lr * min(4.0, stats["sentences_per_batch"] / cfg.data.batch_size)
    assert parts.module.hparams.lr == pytest.approx(want)
    # the rule counts every device of a step
    cfg2 = _cfg(tmp_path, "trainer=gpu", "lm_gpu.max_tokens=500", "trainer.devices=2", "lm_gpu.lr_max_scale=100")
    m2 = build(cfg2).module
    s2 = build(_cfg(tmp_path, "trainer=gpu", "lm_gpu.max_tokens=500")).datamodule.train_batch_stats()
    assert m2.hparams.lr == pytest.approx(cfg2.model.lr * 2 * s2["sentences_per_batch"] / 32)


def test_without_lm_gpu_the_cpu_settings_stay(tmp_path):
    from qe.lm.task import build

    for extra in ([], ["trainer=gpu", "~lm_gpu"]):
        parts = build(_cfg(tmp_path, *extra))
        assert parts.datamodule.max_tokens is None and parts.module.hparams.lr == 0.003
    # data.max_tokens alone: token batches, the configured learning rate
    parts = build(_cfg(tmp_path, "+data.max_tokens=300"))
    assert parts.datamodule.max_tokens == 300 and parts.module.hparams.lr == 0.003


def test_trainer_gpu_lm_settings_train_on_cpu(tmp_path):
    """The whole trainer=gpu LM path (token budget, a loader worker, scaled lr, bf16 autocast) trains and exports,
    with only the accelerator switched to CPU."""
    import qe
    from qe.training import run_training

    cfg = _cfg(tmp_path, "trainer=gpu", "trainer.accelerator=cpu", "lm_gpu.max_tokens=1500", "lm_gpu.num_workers=1")
    m = run_training(cfg)
    assert math.isfinite(m["val/ppl"])
    scores = qe.load(m["export_path"]).score(["the hotel is near the park ."], progress=False)
    assert all(math.isfinite(x) for x in scores)
