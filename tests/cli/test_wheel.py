"""The wheel is the product: built from the sources, it holds the configs, the dataset recipes and the zoo, and,
installed into a fresh environment, `qe` works from a directory with no clone around (train, evaluate, data, zoo).

About 15-30 s: the wheel is built offline (setuptools from this environment, no build isolation), installed with
--no-deps into a venv that sees this environment's packages (torch, Lightning, ...: the site directories of the
interpreter running the tests, added by a .pth file) but not the clone."""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow

PKG = REPO / "qe"


def _can_build_wheels() -> str | None:
    """Why a wheel cannot be built offline here (None: it can)."""
    if importlib.util.find_spec("setuptools") is None:
        return "setuptools is not installed (the build backend; the build runs offline without isolation)"
    from importlib.metadata import version  # not importing setuptools here: it would patch distutils in pytest

    st = tuple(int(x) for x in re.findall(r"\d+", version("setuptools"))[:2])
    if importlib.util.find_spec("wheel") is None and st < (70, 1):
        return f"neither the wheel package nor setuptools>=70.1 (bdist_wheel) is installed (setuptools {st})"
    if importlib.util.find_spec("pip") is None:
        return "pip is not installed"
    return None


def _run(cmd, cwd, env=None, timeout=180):
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))}: rc {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r


def _version() -> str:
    m = re.search(r'^version\s*=\s*"([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert m
    return m.group(1)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    why = _can_build_wheels()
    if why:
        pytest.skip(f"cannot build the wheel offline: {why}")
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"  # a copy, so that the build leaves no build/ or *.egg-info in the shared clone
    src.mkdir()
    shutil.copytree(PKG, src / "qe", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    for f in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / f, src / f)
    for f in ("setup.py", "setup.cfg", "MANIFEST.in"):
        if (REPO / f).is_file():
            shutil.copy2(REPO / f, src / f)
    dist = root / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
          "-w", dist, src], cwd=root)
    (whl,) = dist.glob("qe_nlg-*.whl")
    return whl


def test_wheel_holds_configs_recipes_and_zoo(wheel):
    assert wheel.name.startswith(f"qe_nlg-{_version()}-")
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in ("qe/conf/train.yaml", "qe/conf/evaluate.yaml", "qe/conf/__init__.py", "qe/zoo/__init__.py",
              "qe/zoo/build.py", "qe/app.py", "qe/sweep.py", "qe/cli.py"):
        assert f in names, f
    # every config of the package, every dataset recipe and every packaged resource
    for pattern in ("conf/**/*.yaml", "resources/datasets/*", "resources/**/*"):
        for p in PKG.glob(pattern):
            if p.is_file() and "__pycache__" not in p.parts:
                assert p.relative_to(REPO).as_posix() in names, p
    assert any(n.startswith("qe/resources/datasets/") and n.endswith(".yaml") for n in names)
    for preset in ("qe/conf/logger/tensorboard.yaml", "qe/conf/hparams_search/lm_optuna.yaml",
                   "qe/conf/hydra/launcher/slurm.yaml"):
        assert preset in names
    meta = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "qe = qe.cli:main" in zipfile.ZipFile(wheel).read(meta).decode()
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "Name: qe-nlg" in metadata
    for extra in ("sweep", "slurm", "joblib", "tensorboard"):
        assert f"Provides-Extra: {extra}" in metadata


def _outer_site_dirs() -> list[str]:
    """The site directories of the interpreter running the tests (its venv's, or the system's), in its order."""
    import site

    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        dirs.append(site.getusersitepackages())
    return [d for d in dict.fromkeys(dirs) if os.path.isdir(d)]


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    """(bin dir of a venv holding only the wheel on top of this environment's packages, a work dir, its env)."""
    root = tmp_path_factory.mktemp("venv")
    venv = root / "venv"
    # Not --system-site-packages: run from inside a venv, that flag links the new venv to the *base* interpreter's
    # site-packages, which lack this environment's packages (hydra, torch, ...). A .pth file adds the site
    # directories of the interpreter running the tests instead, from a venv and from a system Python alike.
    r = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        pytest.skip(f"cannot create a venv here: {r.stderr.strip()[-300:]}")
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    py = bindir / ("python.exe" if os.name == "nt" else "python")
    purelib = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], root).stdout.strip())
    (purelib / "_outer_site.pth").write_text("".join(
        f"import site; site.addsitedir({d!r})\n" for d in _outer_site_dirs()))
    # --ignore-installed: the clone's editable install of the same distribution stays outside the venv, untouched
    _run([py, "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed", "-q", wheel], cwd=root)
    work = root / "work"  # no clone, no conf/, no data/ here or above (tmp)
    work.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "QE_CONF_DIR", "QE_RECIPES_DIR", "HYDRA_FULL_ERROR", "QE_COMPACT_ERRORS")}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", QE_MODELS=str(root / "models"),
               PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}")
    return bindir, work, env


def test_installed_wheel_is_the_one_imported(installed):
    bindir, work, env = installed
    r = _run([bindir / "python", "-c", "import qe, qe.conf; print(qe.__file__); print(qe.conf.__file__)"], work, env)
    venv = bindir.parent.resolve()
    for line in r.stdout.split():
        assert Path(line).resolve().is_relative_to(venv), f"{line} is not from the installed wheel"
        assert not Path(line).resolve().is_relative_to(REPO.resolve())


def test_installed_commands_work_outside_a_clone(installed):
    bindir, work, env = installed
    qe = bindir / "qe"
    assert _run([qe, "--version"], work, env).stdout.strip() == f"qe {_version()}"
    out = _run([qe, "data", "list"], work, env).stdout
    for recipe in PKG.glob("resources/datasets/*.yaml"):
        name = next(ln.split(":", 1)[1].strip() for ln in recipe.read_text().splitlines() if ln.startswith("name:"))
        assert re.search(rf"^\s+{re.escape(name)}\s", out, re.M), f"{name} not in `qe data list`:\n{out}"
    out = _run([qe, "zoo", "list"], work, env).stdout
    assert "slor-word-brown-wt2" in out and "not built" in out
    out = _run([qe, "train", "--cfg", "job"], work, env).stdout
    assert "seed: 42" in out and "optimized_metric: ${task.monitor}" in out and "monitor: val/ppl" in out
    assert not (work / "outputs").exists()  # --cfg composes only
    # a real (tiny) training and the embedded-sample meta-evaluation, from the packaged configs
    run = work / "train_run"
    _run([qe, "train", "debug=fast", "model=lstm_lm_small", "model.hidden_size=16", "model.embedding_dim=16",
          "demo_sentences=[]", "trainer=cpu", "logger=none", f"hydra.run.dir={run}"], work, env, timeout=300)
    assert (run / "export" / "qe_export.json").is_file() and (run / "job_result.json").is_file()
    ev = work / "eval_run"
    _run([qe, "evaluate", "stats.bootstrap.n=100", "stats.permutation.n=100", "progress=false", "plots.enabled=false",
          "stats.methods=[pearson]", f"hydra.run.dir={ev}"], work, env, timeout=300)
    assert (ev / "report.md").is_file() and (ev / "scores.jsonl").is_file()
    # errors stay one line in the installed product too
    r = subprocess.run([str(qe), "train", "model=nope"], cwd=work, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and r.stderr.startswith("qe train: error: ") and "Traceback" not in r.stderr
