"""The model zoo: every named model that docs report, built by one seeded, step-based command.

    qe zoo list                       # names, schedules, built or not, checksums
    qe zoo build slor-word-brown-wt2  # -> $QE_MODELS/slor-word-brown-wt2 (prints its checksum)
    qe zoo build                      # every model whose recipe is final
    qe zoo build NAME --gpu           # the GPU schedule (gpu_overrides on top of the CPU recipe)
    qe zoo command NAME               # the qe train command a recipe runs
    qe zoo verify [NAME...]           # bit-identical / equivalent / different from the recorded build
    qe zoo verify NAME --against published   # ... from the build docs report (shipped fingerprint)
    qe zoo compare A B                # the same for two models (names, exports, archives, URLs, fingerprint files)
    qe zoo fingerprint NAME -o F      # a model's identity (checksum + probe-set scores + validation figures)
    qe zoo pack NAME|EXPORT -o DIR    # one verified archive: DIR/NAME.qe.tar.gz (qe.zoo.archive)
    qe zoo install ARCHIVE|URL        # -> $QE_MODELS/NAME, checksums verified before use
    qe zoo push NAME USER/REPO        # publish the archive to the Hugging Face Hub (huggingface_hub)
    qe zoo build NAME --seed S        # the recipe with another seed (seed spread; into --models-dir)

(``python -m experiments.zoo ...`` in a clone is the same program.) The recipes are data, one YAML file per named
model in ``qe/zoo/recipes/`` (read by :mod:`qe.zoo` into :data:`RECIPES`; fields: the :mod:`qe.zoo` docstring), and
ship in the package with the builder, so a wheel alone builds models; the data they read comes from the data
directory (``$QE_DATA_DIR``, see ``qe data``).

Each recipe is ONE ``qe train`` command (Hydra overrides; the schedule is ``trainer.max_steps`` / epochs /
RatPred passes, never ``trainer.max_time``), run from the repository root with a fixed seed and a fixed number of
CPU threads (``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``; ``PYTHONHASHSEED=0``), so building twice on one machine gives
the same export checksum (``qe.core.export.export_checksum``: the export's files, the manifest excluded — the manifest
holds a ``created`` time stamp and the run's paths).

Resumable: a model builds in ``<models>/.build/<name>/`` (``hydra.run.dir`` there, ``ckpt_path=last``), so rerunning
the build command after an interruption continues from the run's ``last.ckpt`` (RatPred: skips finished sub-runs
and resumes the interrupted stage; the zoo adds ``protocol.resume=stage``, see :data:`RATPRED_RESUME`). The finished export is moved to ``<models>/<name>/`` with one rename, and the
build directory is removed (``--keep-build`` keeps it). ``<models>/.zoo/<name>.json`` records the recipe, the
schedule and the checksum (``verify`` compares against it); ``<models>/.zoo/<name>/`` keeps the run's
``results.json``, ``predictions.jsonl`` and ``dev_predictions.jsonl`` (RatPred: the cross-validated test and dev
predictions), ``gruen_report.json`` (GRUEN), ``train.log`` and the CSV logger's ``csv/version_0/metrics.csv`` (the
learning curve).

Resume equality: a build interrupted at the end of an epoch and resumed gives the same checksum as an uninterrupted
one (tests/zoo/test_zoo.py); an interruption in the middle of an epoch (SIGTERM, or a mid-epoch validation checkpoint)
resumes but is not guaranteed to be bit-identical (the data order of the interrupted epoch restarts).

Identity: the checksum holds for one machine and software stack. Every export also records a functional fingerprint
(:mod:`qe.zoo.fingerprint`: scores of a probe set shipped in the package, validation figures), kept in the build
record too; ``verify`` compares the model with the record (or ``--against`` another model or a published
fingerprint file) and says *bit-identical*, *equivalent* (within the kind's documented tolerance) or *different*
(with the largest differences). Exit status: 0 when every model is bit-identical or equivalent, 1 otherwise.

Seed spread: ``qe zoo --models-dir DIR build NAME --seed S`` builds the recipe with seed ``S``
(``seed=S``, or ``protocol.seeds=[S]`` for RatPred) into another models directory, and ``qe zoo spread NAME --seeds
1 2 3`` builds one per seed under ``<models>/.spread/<name>/seed-<S>/`` and prints the validation figures' mean and
sd over the seeds.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from qe import zoo as _names
from qe.zoo import Recipe
from qe.core.jsonio import dumps
from qe.errors import ExportError, MissingDependencyError, QEError
from qe.core.export import MANIFEST, export_checksum, read_manifest, verify_checksum
from qe.zoo import card
from qe.zoo import fingerprint as fpm


class ZooError(Exception):
    """A zoo request that cannot be carried out (unknown name, pending recipe, failed build, refused archive): one
    line for the user (``qe zoo`` prints it and exits with status 2)."""


def display_command(cmd: list[str]) -> str:
    """``[python, -m, qe, train, ...]`` as the user types it: ``qe train ...``."""
    return " ".join(["qe", *cmd[3:]]) if cmd[1:3] == ["-m", "qe"] else " ".join(["python", *cmd[1:]])


#: name -> :class:`Recipe`, read from ``qe/zoo/recipes/<name>.yaml`` (:mod:`qe.zoo`; the one dictionary both modules
#: share, so a recipe added at run time - the tests' pending one - is seen by both)
RECIPES: dict[str, Recipe] = _names.recipes()


# ------------------------------------------------------------------------------------------------------- build
def _env(threads: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), PYTHONHASHSEED="0",
               TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               WANDB_MODE=env.get("WANDB_MODE", "offline"), CUBLAS_WORKSPACE_CONFIG=":4096:8", PYTHONUNBUFFERED="1")
    return env


def with_seed(overrides: list[str] | tuple[str, ...], seed: int) -> list[str]:
    """The overrides with every seed replaced by ``seed`` (``seed=``, RatPred's ``protocol.seeds=[...]``); a recipe
    that names no seed gets ``seed=S``. The recipe's own ``seed=X`` stays the seed of the held-out split
    (``++data.split_seed=X``, :func:`qe.data.corpora.split_seed`): a spread varies the training, not the validation
    sentences, so its figures compare with the named build's."""
    out, seen = [], False
    for o in overrides:
        if o.startswith("seed="):
            out.append(f"++data.split_seed={o.split('=', 1)[1]}")
            o, seen = f"seed={seed}", True
        elif o.startswith("protocol.seeds="):
            o, seen = f"protocol.seeds=[{seed}]", True
        out.append(o)
    return out if seen else [*out, f"seed={seed}"]


def recipe_overrides(recipe: Recipe, models: Path, *, gpu: bool = False, extra: tuple[str, ...] = (),
                     seed: int | None = None) -> list[str]:
    """The recipe's qe train overrides (GPU schedule on top when ``gpu``; ``seed`` replaces the recipe's seed),
    ``{models}`` filled in."""
    ov = list(recipe.overrides) + (list(recipe.gpu_overrides) if gpu else [])
    if seed is not None:
        ov = with_seed(ov, seed)
    return [o.replace("{models}", str(models)) for o in ov + list(extra)]


#: what a zoo build of a RatPred recipe resumes: the interrupted stage from its last.ckpt. RatPred's own default
#: (``protocol.resume=subrun``) retrains an interrupted (seed, fold) sub-run from its start, which for a recipe of one
#: long sub-run (``ratpred-webnlg-cross``: about two CPU hours) is no resume at all. An uninterrupted build is the
#: same either way (the mode is read only when a run is resumed), so the schedule stamp and checksums do not change.
RATPRED_RESUME = "protocol.resume=stage"


def _resume_overrides(overrides: list[str]) -> list[str]:
    ratpred = any(o.split("=", 1)[0].lstrip("+") in ("experiment", "task") and o.split("=", 1)[1].startswith("ratpred")
                  for o in overrides if "=" in o)
    return [RATPRED_RESUME] if ratpred and not any(o.startswith("protocol.resume=") for o in overrides) else []


def train_command(recipe: Recipe, models: Path, build_dir: Path, *, gpu: bool = False,
                  extra: tuple[str, ...] = (), seed: int | None = None) -> list[str]:
    ov = recipe_overrides(recipe, models, gpu=gpu, extra=extra, seed=seed)
    return [sys.executable, "-m", "qe", "train", *ov, *_resume_overrides(ov),
            f"hydra.run.dir={build_dir / 'run'}", f"paths.root_dir={build_dir}", f"export_dir={build_dir / 'export'}",
            "ckpt_path=last", "export=true"]


def get_recipe(name: str) -> Recipe:
    if name not in RECIPES:
        raise ZooError(f"unknown zoo name {name!r}; known: {', '.join(n for n in RECIPES if not n.startswith('_'))}")
    return RECIPES[name]


def checksum(export_dir: Path) -> str:
    """The export's manifest checksum, after checking that the files still match it."""
    manifest = read_manifest(export_dir)
    verify_checksum(export_dir, manifest)
    got = export_checksum(export_dir)
    if manifest.get("checksum") not in (None, got):
        raise RuntimeError(f"{export_dir}: checksum {got} != manifest {manifest.get('checksum')}")
    return got


def _record_path(models: Path, name: str) -> Path:
    return models / ".zoo" / f"{name}.json"


def check_writable(models: Path) -> None:
    """Before a build starts: a file can be written in the models folder (created if needed). A read-only
    ``$QE_MODELS`` (or a path through a file) ends in one :class:`ZooError` line naming the folder, not in an
    OSError traceback halfway through the build."""
    try:
        models.mkdir(parents=True, exist_ok=True)
        probe = models / f".qe-write-check-{os.getpid()}"
        with open(probe, "w", encoding="utf-8"):
            pass
        probe.unlink()
    except OSError as exc:
        if isinstance(exc, (NotADirectoryError, FileExistsError)) or (models.exists() and not models.is_dir()):
            reason = "a part of that path is a file, not a folder"
        else:
            reason = exc.strerror or type(exc).__name__
        raise ZooError(f"the models folder {models} is not writable ({reason}); set ${_names.ENV_VAR} (or qe zoo "
                       f"--models-dir) to a folder you can write") from None


def build(name: str, models_dir: str | Path | None = None, *, gpu: bool = False, extra: tuple[str, ...] = (),
          install: bool = True, force: bool = False, keep_build: bool = False, quiet: bool = False,
          seed: int | None = None) -> str | None:
    """Build ``name`` into ``models_dir`` and return its checksum.

    ``install=False`` trains in the build directory and stops there (what an interruption leaves behind; with
    ``extra`` such as ``trainer.max_epochs=1``, the tests' "interrupted half-way"). A rerun resumes. ``seed``
    replaces the recipe's seed (seed spread; build into another ``models_dir``); dependencies keep their recipes.
    """
    recipe = get_recipe(name)
    if not recipe.buildable:
        raise ZooError(f"{name}: {recipe.notes or 'recipe pending'}")
    models = _names.models_dir(models_dir).resolve()
    final = models / name
    if (final / MANIFEST).is_file() and not force:
        digest = checksum(final)
        if not quiet:
            print(f"{name}: already built at {final} (checksum {digest}; --force rebuilds)")
        return digest
    check_writable(models)
    for dep in recipe.needs:
        if not (models / dep / MANIFEST).is_file():
            build(dep, models, gpu=gpu, keep_build=keep_build, quiet=quiet)
    build_dir = models / ".build" / name
    build_dir.mkdir(parents=True, exist_ok=True)
    cmd = train_command(recipe, models, build_dir, gpu=gpu, extra=extra, seed=seed)
    stamp = build_dir / "recipe.json"
    schedule = {"name": name, "gpu": gpu, "overrides": recipe_overrides(recipe, models, gpu=gpu, seed=seed),
                "threads": recipe.threads}
    if seed is not None:
        schedule["seed"] = seed
    if stamp.is_file():
        old = json.loads(stamp.read_text())
        if old != schedule:
            raise ZooError(f"{build_dir} holds an interrupted build of another schedule ({'GPU' if old.get('gpu') else 'CPU'},"
                             f" overrides {old.get('overrides')}); remove that folder to start afresh")
    else:
        stamp.write_text(dumps(schedule, indent=2) + "\n")
    if not quiet:
        print(f"{name}: building in {build_dir} ({'GPU' if gpu else 'CPU'} schedule; rerun the same command to resume)\n"
              f"  {display_command(cmd)}", flush=True)
    t0 = time.time()
    log_path = build_dir / "build.log"
    with open(log_path, "a", encoding="utf-8") as log:
        proc = subprocess.run(cmd, env=_env(recipe.threads), stdout=None if not quiet else log,
                              stderr=subprocess.STDOUT if quiet else None)
    if proc.returncode != 0:
        tail = log_path.read_text(errors="replace")[-3000:] if quiet else ""
        raise ZooError(f"{name}: qe train exited with status {proc.returncode}; rerun "
                       f"`{_names.build_command(name)}` to resume from {build_dir}\n{tail}")
    export = build_dir / "export"
    if not install:
        return checksum(export) if (export / MANIFEST).is_file() else None
    digest = checksum(export)
    # the card names the zoo command (the manifest and the card are outside the checksum: the bits do not change)
    zoo_cmd = _names.build_command(name) + (f" --seed {seed}" if seed is not None else "") + (" --gpu" if gpu else "")
    rebuild = {"zoo": zoo_cmd, "zoo_name": name, "command": display_command(cmd)}
    if fpm.has_scores(read_manifest(export).get("fingerprint")):
        card.refresh(export, rebuild=rebuild)
    else:  # an export written without a card (content_aligner): its fingerprint is scored here, once
        card.finish_export(export, final=final, rebuild=rebuild)
    if final.exists():  # --force: replace atomically
        old = models / ".build" / f".{name}.old"
        shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
        os.replace(export, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(export, final)
    manifest = read_manifest(final)
    rec = {**schedule, "kind": manifest["kind"], "checksum": digest, "fingerprint": manifest.get("fingerprint"),
           "command": display_command(cmd), "build_seconds": round(time.time() - t0, 1), "recipe": asdict(recipe)}
    _record_path(models, name).parent.mkdir(parents=True, exist_ok=True)
    _record_path(models, name).write_text(dumps(rec, indent=2) + "\n")
    # the run's figures outlive the build directory: RatPred's results.json / predictions.jsonl (the cross-validated
    # test predictions docs evaluate), training logs
    kept = _record_path(models, name).with_suffix("")
    for f in RUN_FILES:
        src = build_dir / "run" / f
        if src.is_file():
            (kept / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, kept / f)
    if not keep_build:
        shutil.rmtree(build_dir, ignore_errors=True)
    print(f"{name}: built {final}\n  checksum {digest}", flush=True)
    return digest


#: files of a build's run directory copied to ``<models>/.zoo/<name>/`` before the build directory is removed
#: (the CSV logger's per-validation metrics too: the learning curve of a zoo LM outlives its build)
RUN_FILES = ("results.json", "predictions.jsonl", "dev_predictions.jsonl", "gruen_report.json", "train.log",
             "csv/version_0/metrics.csv", "csv/version_0/hparams.yaml")


def _identity(spec: str, models_dir: str | Path | None, *, live: bool = False,
              timeout: float | None = None) -> fpm.Identity:
    """What ``spec`` names, as an identity: a zoo name built in the models directory, an export directory, an
    archive (path or URL; fetched and verified), or a fingerprint file (``qe zoo fingerprint -o``, a build record)."""
    from qe.zoo import archive

    p = Path(spec).expanduser()
    if (p / MANIFEST).is_file():
        return fpm.identity_of_export(p, live=live)
    if archive.is_archive(spec):
        return fpm.identity_of_export(archive.fetch_export(spec, models_dir=models_dir, timeout=timeout), live=live,
                                      source=spec)
    if p.is_file() and p.suffix == ".json":
        return fpm.identity_of_json(p)
    built = _names.model_path(spec, models_dir)
    if (built / MANIFEST).is_file():
        return fpm.identity_of_export(built, live=live, source=spec)
    if spec in _names.NAMES:
        raise ZooError(_names.not_built_message(spec))
    raise ZooError(f"{spec}: not a zoo name built in {_names.models_dir(models_dir)}, an export directory, an archive, "
                   f"a URL or a fingerprint .json file")


def _reference(name: str, models: Path, manifest: dict) -> fpm.Identity | None:
    """The recorded build of ``name``: its zoo record (build or install), else the fingerprint in its manifest."""
    rec = _record_path(models, name)
    if rec.is_file():
        ident = fpm.identity_of_json(rec)
        ident.kind = ident.kind or manifest["kind"]
        ident.source = f"the recorded build ({rec})"
        if not fpm.has_scores(ident.fingerprint) and fpm.has_scores(manifest.get("fingerprint")) \
                and ident.checksum == manifest.get("checksum"):
            ident.fingerprint = manifest["fingerprint"]
        return ident
    if fpm.has_scores(manifest.get("fingerprint")):
        return fpm.Identity(f"the fingerprint recorded in {models / name / MANIFEST}", manifest["kind"],
                            manifest.get("checksum"), manifest["fingerprint"])
    return None


def _print_verdict(label: str, v: fpm.Verdict, ref: str) -> None:
    word = {"bit-identical": "to", "equivalent": "to", "different": "from"}[v.status]
    head, _, rest = v.summary.partition(":")
    print(f"{label}: {v.status} {word} {ref}" + (f" ({rest.strip()})" if rest else ""))
    for d in v.details:
        print(f"    {d}")


#: ``qe zoo verify NAME --against published``: the fingerprint of the build that docs report, shipped in the package
PUBLISHED = "published"


def _published_path(name: str) -> Path:
    from qe.core.paths import resources_dir

    return resources_dir() / "fingerprints" / f"{name}.json"


def published_fingerprint(name: str) -> Path | None:
    """``qe/resources/fingerprints/<name>.json``: the identity (checksum, probe-set scores, validation figures) of the
    build of ``name`` that docs/results/zoo.md reports, written by ``qe zoo fingerprint NAME -o`` on the machine that
    built it; None when this version of qe ships none for ``name``."""
    p = _published_path(name)
    return p if p.is_file() else None


def verify(names: list[str], models_dir: str | Path | None = None, *, against: str | None = None,
           timeout: float | None = None, live: bool = False) -> int:
    """For each built model: its files still match its manifest, and it is bit-identical / equivalent / different
    compared with the recorded build (``against``: another model, archive, URL or fingerprint file). A model whose
    checksum differs from the reference is scored on its probe set now (its own, current behaviour); ``live`` scores
    it even when the bits match (a change of the code around the model: the coverage scorer's matcher). Returns 0
    when every model is bit-identical or equivalent."""
    models = _names.models_dir(models_dir)
    for n in names or []:
        if not (models / n / MANIFEST).is_file():
            get_recipe(n)  # an unknown name is an error naming the known ones
    bad = 0
    for name in names or [n for n in RECIPES if (models / n / MANIFEST).is_file()]:
        path = models / name
        if not (path / MANIFEST).is_file():
            print(f"{name}: not built ({_names.build_command(name)})")
            bad += 1
            continue
        try:
            digest = checksum(path)
        except Exception as exc:  # noqa: BLE001 - report every model
            print(f"{name}: FAILED {' '.join(str(exc).split())}")
            bad += 1
            continue
        manifest = read_manifest(path)
        try:
            if against == PUBLISHED:
                pub = published_fingerprint(name)
                if pub is None:
                    print(f"{name}: no published fingerprint ({_published_path(name)} is not in this version of qe)")
                    bad += 1
                    continue
                ref = fpm.identity_of_json(pub)
                ref.source = f"the published build ({pub.name}, docs/results/zoo.md)"
            else:
                ref = _identity(against, models_dir, timeout=timeout) if against else _reference(name, models,
                                                                                                  manifest)
            if ref is None:
                print(f"{name}: ok {digest} (files match the manifest; no build record or fingerprint to compare with)")
                continue
            current = fpm.Identity(str(path), manifest["kind"], digest, None, path)  # rescored if bits differ
            v = fpm.compare(ref, current, rescore_same_bits=live)
        except (ExportError, ZooError) as exc:
            print(f"{name}: FAILED {' '.join(str(exc).split())}")
            bad += 1
            continue
        _print_verdict(name, v, ref.source)
        bad += not v.same
    return 1 if bad else 0


def compare(a: str, b: str, models_dir: str | Path | None = None, *, live: bool = False,
            as_json: bool = False, timeout: float | None = None) -> int:
    """``qe zoo compare A B``: bit-identical / equivalent / different (0, 0, 1). ``live`` rescores both exports'
    probe sets instead of using their recorded fingerprints."""
    ia, ib = _identity(a, models_dir, live=live, timeout=timeout), _identity(b, models_dir, live=live, timeout=timeout)
    v = fpm.compare(ia, ib, rescore_same_bits=live)
    if as_json:
        print(dumps({"a": ia.source, "b": ib.source, **v.to_json()}, indent=2))  # max_delta may be inf: "inf"
    else:
        _print_verdict(f"{b}", v, a)
    return 0 if v.same else 1


def fingerprint(spec: str, models_dir: str | Path | None = None, *, out: str | None = None, live: bool = False,
                timeout: float | None = None) -> int:
    """Print (or write to ``out``) a model's identity: kind, checksum, fingerprint - the file a model's publisher
    gives so that others can ``qe zoo verify NAME --against FILE`` their rebuild."""
    ident = _identity(spec, models_dir, live=live, timeout=timeout)
    if not fpm.has_scores(ident.fingerprint):
        ident.ensure_fingerprint()
    text = dumps({k: v for k, v in ident.to_json().items() if k != "source"}, indent=2) + "\n"
    if out:
        Path(out).write_text(text, encoding="utf-8")
        print(f"{spec}: fingerprint written to {out} (checksum {str(ident.checksum)[:12]}, "
              f"{ident.fingerprint['n']} probes of {ident.fingerprint['probe_set']!r})")
    else:
        sys.stdout.write(text)
    return 0


def spread(name: str, seeds: list[int], models_dir: str | Path | None = None, *, gpu: bool = False) -> int:
    """Build ``name`` once per seed into ``<models>/.spread/<name>/seed-<S>/`` (resumable, like every build) and print
    each validation figure's mean and sd over the seeds: what a rebuild elsewhere should give."""
    import statistics

    models = _names.models_dir(models_dir)
    figures: dict[str, list[float]] = {}
    for s in seeds:
        where = models / ".spread" / name / f"seed-{s}"
        build(name, where, gpu=gpu, seed=s)
        for k, v in fpm.validation_figures(read_manifest(where / name)).items():
            figures.setdefault(k, []).append(v)
    print(f"{name}: validation figures over seeds {', '.join(map(str, seeds))} (mean ± sd)")
    for k, vals in figures.items():
        sd = statistics.stdev(vals) if len(vals) > 1 else float("nan")
        print(f"  {k:40s} {statistics.fmean(vals):.4f} ± {sd:.4f}  ({', '.join(f'{v:.4f}' for v in vals)})")
    return 0


def list_models(models_dir: str | Path | None = None, verbose: bool = False) -> int:
    models = _names.models_dir(models_dir)
    print(f"models directory: {models} (${_names.ENV_VAR}; --models-dir)")
    for name, r in RECIPES.items():
        if r.status == "test" and not verbose:
            continue
        built = (models / name / MANIFEST).is_file()
        state = f"built {read_manifest(models / name).get('checksum', '')[:12]}" if built else "not built"
        status = "" if r.status == "final" else f" [{r.status}]"
        print(f"{name:22s}{status} {state}: {r.description}")
        if r.status == "pending":
            print(f"    {r.notes}")
            continue
        print(f"    CPU: {r.cpu_budget}")
        if verbose:
            print(f"    GPU: {r.gpu_time or 'not measured'} (--gpu)" if r.gpu_overrides else "    GPU: no GPU schedule")
            print(f"    overrides: {' '.join(r.overrides)}")
            print(f"    gpu_overrides: {' '.join(r.gpu_overrides) or '-'}")
            if r.notes:
                print(f"    note: {r.notes}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``qe zoo ...``. Errors a user can act on (unknown name, refused archive, missing package) are raised as one-line
    :class:`ZooError` (the ``qe`` CLI prints it and exits with status 2)."""
    try:
        return _main(argv)
    except (QEError, FileNotFoundError) as exc:  # ExportError, MissingDependencyError, archive.SettingError ...
        raise ZooError(" ".join(str(exc.args[0] if exc.args else exc).split())) from exc


def _timeout_option(parser: argparse.ArgumentParser) -> None:
    from qe.zoo import archive

    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help=f"how long to wait for a server's answer when reading a URL (default: "
                             f"${archive.TIMEOUT_ENV} or {archive.DEFAULT_TIMEOUT:g})")


def _main(argv: list[str] | None = None) -> int:
    from qe.zoo import archive

    ap = argparse.ArgumentParser(prog="qe zoo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--models-dir", default=None, help=f"default: ${_names.ENV_VAR} or {_names.DEFAULT_DIR}")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build named models (none: every final recipe)")
    b.add_argument("names", nargs="*")
    b.add_argument("--gpu", action="store_true", help="the GPU schedule (gpu_overrides)")
    b.add_argument("--force", action="store_true", help="rebuild a model that is already built")
    b.add_argument("--keep-build", action="store_true", help="keep <models>/.build/<name> (checkpoints, logs)")
    b.add_argument("--seed", type=int, default=None,
                   help="replace the recipe's seed (seed spread; use another --models-dir)")
    lp = sub.add_parser("list", help="names, schedules, built or not")
    lp.add_argument("-v", "--verbose", action="store_true")
    v = sub.add_parser("verify", help="bit-identical / equivalent / different from the recorded build")
    v.add_argument("names", nargs="*")
    v.add_argument("--against", default=None,
                   help="compare with this model instead: zoo name, export, archive, URL or fingerprint .json; "
                        "'published': the build docs report (fingerprint shipped in qe/resources/fingerprints)")
    v.add_argument("--live", action="store_true",
                   help="score the probe set now even when the bits match: shows a change of the code around the "
                        "model (the content matcher)")
    _timeout_option(v)
    cp = sub.add_parser("compare", help="bit-identical / equivalent / different: two models")
    cp.add_argument("a", help="zoo name, export directory, archive, URL or fingerprint .json")
    cp.add_argument("b")
    cp.add_argument("--live", action="store_true",
                    help="score both probe sets now instead of using the recorded (even when the bits match)")
    cp.add_argument("--json", action="store_true")
    _timeout_option(cp)
    fp = sub.add_parser("fingerprint", help="a model's identity: checksum, probe-set scores, validation figures")
    fp.add_argument("model", help="zoo name, export directory, archive or URL")
    fp.add_argument("-o", "--output", default=None, help="write the JSON here (default: print it)")
    fp.add_argument("--live", action="store_true", help="score the probe set now instead of using the recorded")
    _timeout_option(fp)
    pk = sub.add_parser("pack", help="one verified archive of a model: OUT/NAME.qe.tar.gz (+ .sha256)")
    pk.add_argument("model", help="zoo name or export directory")
    pk.add_argument("-o", "--out", default=".", help="output folder (default: .)")
    pk.add_argument("--name", default=None, help="the name inside the archive (default: zoo name / folder name)")
    ins = sub.add_parser("install", help="verify an archive (path or URL) and install it into the models directory")
    ins.add_argument("source", help="archive path, file://, http(s)://, s3://, hf://USER/REPO/FILE ...")
    ins.add_argument("--name", default=None, help="install under this name (default: the archive's)")
    ins.add_argument("--force", action="store_true", help="replace another model of that name")
    ins.add_argument("--sha256", default=None, help="the archive's expected sha256 (its .sha256 file)")
    ins.add_argument("--no-check", action="store_true",
                     help="do not load the model and score its probe set against the archive's fingerprint before "
                          "installing it")
    _timeout_option(ins)
    pu = sub.add_parser("push", help="publish a model to the Hugging Face Hub (needs huggingface_hub and a token)")
    pu.add_argument("model", help="zoo name or export directory")
    pu.add_argument("repo", help="USER/REPO on the Hub")
    pu.add_argument("--private", action="store_true")
    pu.add_argument("--revision", default=None)
    sp = sub.add_parser("spread", help="build a recipe with several seeds; mean and sd of its validation figures")
    sp.add_argument("name")
    sp.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    sp.add_argument("--gpu", action="store_true")
    c = sub.add_parser("command", help="print the qe train command of a recipe")
    c.add_argument("name")
    c.add_argument("--gpu", action="store_true")
    c.add_argument("--seed", type=int, default=None)
    a = ap.parse_args(argv)
    if a.cmd == "list":
        return list_models(a.models_dir, a.verbose)
    if a.cmd == "verify":
        return verify(a.names, a.models_dir, against=a.against, timeout=a.timeout, live=a.live)
    if a.cmd == "compare":
        return compare(a.a, a.b, a.models_dir, live=a.live, as_json=a.json, timeout=a.timeout)
    if a.cmd == "fingerprint":
        return fingerprint(a.model, a.models_dir, out=a.output, live=a.live, timeout=a.timeout)
    if a.cmd == "pack":
        dest = archive.pack(a.model, a.out, name=a.name, models_dir=a.models_dir)
        meta = archive.read_meta(dest)
        print(f"{dest}\n  sha256 {archive.sha256_of(dest)}  ({meta['kind']}, export checksum "
              f"{meta['export_checksum'][:12]}, {len(meta['files'])} files)")
        return 0
    if a.cmd == "install":
        path, meta, done = archive.install(a.source, a.models_dir, name=a.name, force=a.force, sha256=a.sha256,
                                           timeout=a.timeout, check=not a.no_check)
        state = "installed" if done else "already installed"
        checked = f"; {meta['checked']}" if meta.get("checked") else ""
        print(f"{path.name}: {state} at {path} (verified; export checksum {meta['export_checksum'][:12]}{checked})")
        return 0
    if a.cmd == "push":
        url = archive.push(a.model, a.repo, models_dir=a.models_dir, private=a.private, revision=a.revision)
        print(f"pushed; load it with qe.load({url!r}) or: qe zoo install {url}")
        return 0
    if a.cmd == "spread":
        return spread(a.name, a.seeds, a.models_dir, gpu=a.gpu)
    if a.cmd == "command":
        models = _names.models_dir(a.models_dir)
        cmd = train_command(get_recipe(a.name), models, models / ".build" / a.name, gpu=a.gpu, seed=a.seed)
        print(display_command(cmd))
        return 0
    names = a.names or [n for n, r in RECIPES.items() if r.status == "final"]
    sums = {n: build(n, a.models_dir, gpu=a.gpu, force=a.force, keep_build=a.keep_build, seed=a.seed) for n in names}
    print("\n".join(f"{n}  {s}" for n, s in sums.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
