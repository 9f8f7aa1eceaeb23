"""`qe train` / `qe evaluate` / `qe data` as a user meets them: every user error is one line on stderr with its exit
status (no traceback unless --debug or HYDRA_FULL_ERROR=1), a missing Hydra plugin or logger names the pip extra,
and every multirun ends with a sweep summary (qe/app.py, qe/sweep.py)."""
import csv
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

#: one tiny LM training (seconds on one CPU thread): the embedded sample corpus, a 16-unit LSTM, 3 batches
TINY_TRAIN = ["debug=fast", "model=lstm_lm_small", "model.hidden_size=16", "model.embedding_dim=16",
              "demo_sentences=[]", "trainer=cpu"]
#: environment variables of the user's shell that would change what is tested
_CLEARED = ("HYDRA_FULL_ERROR", "QE_COMPACT_ERRORS", "QE_CONF_DIR", "QE_RECIPES_DIR", "LOCAL_RANK", "NODE_RANK")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=str(REPO), **extra)
    return env


def qe(*args: str, cwd: Path, timeout: int = 240, **env: str) -> subprocess.CompletedProcess:
    """``qe ARGS`` as a user runs it, from ``cwd`` (not the clone: packaged configs)."""
    return subprocess.run([sys.executable, "-m", "qe", *args], cwd=cwd, env=_env(**env), capture_output=True,
                          text=True, timeout=timeout)


def one_line_error(r: subprocess.CompletedProcess, status: int, prog: str, *, only_line: bool = True) -> str:
    """The single ``PROG: error: ...`` line of a run that ended with ``status`` and no traceback."""
    assert r.returncode == status, f"rc {r.returncode}\n{r.stderr[-3000:]}"
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr[-3000:]
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith(f"{prog}: error: ")]
    assert len(errors) == 1, r.stderr[-3000:]
    if only_line:  # nothing else at all (an error found before anything ran)
        assert r.stderr.strip() == errors[0], r.stderr[-3000:]
    return errors[0]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


# ------------------------------------------------------------------------------------------- config errors
def test_unknown_config_option_is_one_line_naming_the_options(tmp_path):
    r = qe("train", "model=nope", cwd=tmp_path)
    line = one_line_error(r, 2, "qe train")
    assert "'model/nope'" in line and "available options in 'model'" in line
    for option in ("lstm_lm", "lstm_lm_small", "minilm"):  # qe/conf/model/*.yaml
        assert option in line
    assert not (tmp_path / "outputs").exists()  # nothing ran


def test_bad_override_is_one_line(tmp_path):
    line = one_line_error(qe("train", "no_such_key=1", cwd=tmp_path), 2, "qe train")
    assert "no_such_key" in line and "+no_such_key=1" in line  # Hydra's hint survives the one-lining


def test_hydra_usage_error_is_one_line(tmp_path):
    line = one_line_error(qe("train", "-m", "--cfg", "job", cwd=tmp_path), 2, "qe train")
    assert "Only one of --run, --multirun, --cfg" in line


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(_has_cuda(), reason="this machine has a CUDA device")
def test_gpu_trainer_without_a_gpu_is_one_line(tmp_path):
    r = qe("train", "trainer=gpu", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    line = one_line_error(r, 2, "qe train", only_line=False)
    assert "trainer.accelerator=gpu" in line and "no usable CUDA device" in line and "trainer=cpu" in line
    assert not (tmp_path / "run" / "checkpoints").exists()  # checked before any data is read
    assert json.loads((tmp_path / "run" / "job_result.json").read_text())["status"] == "failed"


def test_debug_and_hydra_full_error_give_the_traceback(tmp_path):
    r = qe("train", "model=nope", "--debug", cwd=tmp_path)
    assert r.returncode not in (0, 2) and "Traceback" in r.stderr and "MissingConfigException" in r.stderr
    assert "qe train: error:" not in r.stderr
    r = qe("train", "model=nope", cwd=tmp_path, HYDRA_FULL_ERROR="1")
    assert r.returncode not in (0, 2) and "Traceback" in r.stderr and "MissingConfigException" in r.stderr


PLUGINS = [
    (["-m", "hparams_search=lm_optuna"], "hydra_plugins.hydra_optuna_sweeper", "sweep", "hydra-optuna-sweeper"),
    (["hparams_search=gruen_optuna"], "hydra_plugins.hydra_optuna_sweeper", "sweep", "hydra-optuna-sweeper"),
    (["-m", "hydra/launcher=joblib"], "hydra_plugins.hydra_joblib_launcher", "joblib", "hydra-joblib-launcher"),
    (["-m", "hydra/launcher=slurm"], "hydra_plugins.hydra_submitit_launcher", "slurm", "hydra-submitit-launcher"),
]


@pytest.mark.parametrize("args,module,extra,dist", PLUGINS, ids=[" ".join(p[0]) for p in PLUGINS])
def test_missing_plugin_names_the_extra(tmp_path, args, module, extra, dist):
    if _installed(module):
        pytest.skip(f"{dist} is installed here, so the missing-plugin message cannot be seen")
    line = one_line_error(qe("train", *args, cwd=tmp_path), 2, "qe train")
    assert f"pip install 'qe-nlg[{extra}]'" in line and dist in line and "not installed" in line
    assert not (tmp_path / "outputs").exists()  # no job started with the default config


def _tensorboard_installed() -> bool:
    return _installed("tensorboard") or _installed("tensorboardX")


@pytest.mark.skipif(_tensorboard_installed(), reason="tensorboard is installed here (the in-process test below "
                                                     "simulates its absence)")
def test_tensorboard_logger_without_tensorboard_names_the_extra(tmp_path):
    r = qe("train", "logger=tensorboard", *TINY_TRAIN, f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    line = one_line_error(r, 2, "qe train", only_line=False)
    assert "pip install 'qe-nlg[tensorboard]'" in line and "TensorBoardLogger" in line
    assert not (tmp_path / "run" / "checkpoints").exists()  # checked before any data is read or model built


def test_tensorboard_absence_simulated_in_process(tmp_path, monkeypatch, capsys):
    """The same check where tensorboard is installed: its import spec is hidden from qe.app's preflight."""
    from hydra.core.global_hydra import GlobalHydra

    from qe import app

    real_find_spec = importlib.util.find_spec

    def find_spec(name, *a, **kw):
        return None if name.split(".")[0] in ("tensorboard", "tensorboardX") else real_find_spec(name, *a, **kw)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    for k in _CLEARED:
        monkeypatch.delenv(k, raising=False)
    GlobalHydra.instance().clear()
    try:
        with pytest.raises(SystemExit) as exc:
            app.train(["logger=tensorboard", *TINY_TRAIN, f"hydra.run.dir={tmp_path / 'run'}"])
    finally:
        GlobalHydra.instance().clear()
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "qe train: error: logger.tensorboard (TensorBoardLogger) needs the tensorboard package" in err
    assert "pip install 'qe-nlg[tensorboard]'" in err and "Traceback" not in err
    assert not (tmp_path / "run" / "checkpoints").exists()
    assert "HYDRA_FULL_ERROR" not in os.environ  # run_hydra restores the environment it changed


# -------------------------------------------------------------------------------------------- data errors
@pytest.fixture
def malformed_csv(tmp_path) -> Path:
    p = tmp_path / "rated.csv"
    p.write_text("id,system,dataset,output,ratings.fluency\n"
                 "r1,S1,D,a fine output,3\n"
                 "r2,S1,D,another output,very good\n", encoding="utf-8")
    return p


def test_evaluate_malformed_csv_names_file_and_line(tmp_path, malformed_csv):
    r = qe("evaluate", "dataset=file", f"dataset.name={malformed_csv}", f"hydra.run.dir={tmp_path / 'ev'}",
           cwd=tmp_path)
    line = one_line_error(r, 2, "qe evaluate", only_line=False)
    assert f"{malformed_csv}:3" in line and "ratings.fluency" in line and "'very good'" in line


def test_evaluate_py_in_a_clone_reports_the_same(tmp_path, malformed_csv):
    r = subprocess.run([sys.executable, "evaluate.py", "dataset=file", f"dataset.name={malformed_csv}",
                        f"hydra.run.dir={tmp_path / 'ev'}"], cwd=REPO, env=_env(), capture_output=True, text=True,
                       timeout=240)
    line = one_line_error(r, 2, "evaluate.py", only_line=False)
    assert f"{malformed_csv}:3" in line


def test_evaluate_debug_gives_the_traceback(tmp_path, malformed_csv):
    r = qe("evaluate", "dataset=file", f"dataset.name={malformed_csv}", f"hydra.run.dir={tmp_path / 'ev'}", "--debug",
           cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" in r.stderr and "RecordError" in r.stderr
    assert f"{malformed_csv}:3" in r.stderr


def test_evaluate_missing_file_is_one_line(tmp_path):
    missing = tmp_path / "nope.jsonl"
    r = qe("evaluate", "dataset=file", f"dataset.name={missing}", f"hydra.run.dir={tmp_path / 'ev'}", cwd=tmp_path)
    assert str(missing) in one_line_error(r, 2, "qe evaluate", only_line=False)


@pytest.mark.parametrize("action", ["verify", "download"])
def test_data_unknown_dataset_is_one_line(tmp_path, action):
    line = one_line_error(qe("data", action, "no-such-set", cwd=tmp_path), 2, "qe data")
    assert "unknown dataset 'no-such-set'" in line and "emnlp17" in line  # the recipes are listed
    r = qe("data", action, "no-such-set", "--debug", cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" in r.stderr and "DatasetError" in r.stderr


# ---------------------------------------------------------------------------------------------- multirun
def _summary_rows(sweep: Path) -> tuple[list[str], list[dict]]:
    with (sweep / "sweep_summary.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], [dict(zip(rows[0], r)) for r in rows[1:]]


def test_two_job_multirun_writes_a_sorted_summary(tmp_path):
    sweep = tmp_path / "sweep"
    r = qe("train", "-m", "seed=1,2", *TINY_TRAIN, f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    header, rows = _summary_rows(sweep)
    assert header == ["job", "overrides", "val/ppl", "best val/ppl", "export_path", "status"]
    assert len(rows) == 2 and {row["status"] for row in rows} == {"completed"}
    results = {str(j): json.loads((sweep / str(j) / "job_result.json").read_text()) for j in (0, 1)}
    for row in rows:
        res = results[row["job"]]
        assert res["metric"] == "val/ppl" and res["direction"] == "minimize" and res["status"] == "completed"
        assert row["overrides"].split()[0] == f"seed={int(row['job']) + 1}"
        assert float(row["val/ppl"]) == pytest.approx(res["value"], rel=1e-5)
        assert float(row["best val/ppl"]) == pytest.approx(res["best_value"], rel=1e-5)
        assert Path(row["export_path"]) == sweep / row["job"] / "export"
        assert (Path(row["export_path"]) / "qe_export.json").is_file()
    values = [float(row["val/ppl"]) for row in rows]
    assert values == sorted(values)  # perplexity: lowest first
    assert rows[0]["job"] == min(results, key=lambda j: results[j]["value"])
    md = (sweep / "sweep_summary.md").read_text(encoding="utf-8")
    table = [ln for ln in md.splitlines() if ln.startswith("| ")]
    assert len(table) == 3  # header + 2 jobs, in the CSV's order
    assert [ln.split("|")[1].strip() for ln in table[1:]] == [row["job"] for row in rows]
    assert "sorted by `val/ppl` (minimize)" in md and f"Best: job {rows[0]['job']}" in md


def test_a_failed_job_does_not_stop_the_sweep_and_is_summarised(tmp_path):
    sweep = tmp_path / "sweep"
    r = qe("train", "-m", "data.train=[{name:nope}],[{name:sample}]", *TINY_TRAIN, f"hydra.sweep.dir={sweep}",
           cwd=tmp_path)
    line = one_line_error(r, 2, "qe train", only_line=False)
    assert line.startswith("qe train: error: job 0 (data.train=[{name:nope}]") and "unknown corpus source" in line
    assert "Traceback" not in r.stderr and str(sweep / "sweep_summary.md") in r.stderr
    _, rows = _summary_rows(sweep)
    assert [(row["job"], row["status"]) for row in rows] == [("1", "completed"), ("0", "failed")]
    assert (sweep / "1" / "export" / "qe_export.json").is_file()  # the job after the failed one ran
    failed = json.loads((sweep / "0" / "job_result.json").read_text())
    assert failed["status"] == "failed" and "unknown corpus source 'nope'" in failed["error"]
    assert "failed: ValueError: unknown corpus source" in (sweep / "sweep_summary.md").read_text()


def test_summary_direction_and_jobs_without_results(tmp_path):
    """write_summary on a sweep folder written by hand: a maximised metric, a job that left no result."""
    from qe.sweep import write_summary

    def job(num, value, status="completed"):
        d = tmp_path / str(num)
        (d / ".hydra").mkdir(parents=True)
        (d / ".hydra" / "overrides.yaml").write_text(f"- model.lr={num}\n")
        if value is not None:
            (d / "job_result.json").write_text(json.dumps({
                "job": num, "overrides": [f"model.lr={num}"], "metric": "val/pearson", "value": value,
                "direction": "maximize", "best_metric": "val/pearson", "best_value": value,
                "export_path": str(d / "export"), "status": status}))

    job(0, 0.2), job(1, 0.7), job(2, None), job(3, 0.5)
    csv_path, md_path = write_summary(tmp_path)
    header, rows = _summary_rows(tmp_path)
    assert header[2] == "val/pearson"
    assert [row["job"] for row in rows] == ["1", "3", "0", "2"]  # highest first; no result last
    assert rows[-1]["status"] == "no result" and rows[-1]["overrides"] == "model.lr=2"
    assert "(maximize)" in md_path.read_text()
