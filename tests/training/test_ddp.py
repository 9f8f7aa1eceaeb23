"""Two gloo processes on CPU: each rank trains on its own share of the data (no sentence on both ranks)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_ddp_ranks_train_on_disjoint_shares(tmp_path):
    probe = tmp_path / "probe"
    env = dict(os.environ, PYTHONUNBUFFERED="1", QE_ROOT_DIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join([str(REPO), str(Path(__file__).resolve().parent), os.environ.get("PYTHONPATH", "")]))
    args = ["data=lm_sample", "model=lstm_lm_small", "model.hidden_size=16", "model.embedding_dim=16", "logger=none",
            "trainer=ddp_cpu", "trainer.max_epochs=1", "trainer.enable_progress_bar=false", "data.batch_size=16",
            "+callbacks.probe._target_=ddp_probe.RecordBatches", f"+callbacks.probe.out_dir={probe}",
            f"hydra.run.dir={tmp_path}/run", f"export_dir={tmp_path}/export", "demo_sentences=[]", "test=false"]
    r = subprocess.run([sys.executable, str(REPO / "train.py"), *args], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    seen = {int(p.stem.split("_")[0][4:]): json.loads(p.read_text()) for p in probe.glob("rank*_epoch0.json")}
    assert sorted(seen) == [0, 1], "both ranks must have trained"
    assert all(s["world"] == 2 for s in seen.values())
    rows = {k: [tuple(x) for x in s["rows"]] for k, s in seen.items()}
    n_train = seen[0]["n_train"]
    # equal work per rank (DDP needs the same number of steps), nothing seen twice, nothing seen on both ranks
    assert len(rows[0]) > 0 and abs(len(rows[0]) - len(rows[1])) <= 16
    assert len(set(rows[0])) == len(rows[0]) and len(set(rows[1])) == len(rows[1])
    assert not set(rows[0]) & set(rows[1]), "a training sentence was seen by both ranks"
    # together the ranks cover the epoch, up to the remainder batches dropped to keep the ranks in step
    assert len(rows[0]) + len(rows[1]) >= n_train - 2 * 16
