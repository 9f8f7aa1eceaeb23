"""The one command: load a rated dataset, score it, meta-evaluate, write the report (``evaluate.py``,
``qe evaluate``, or :func:`evaluate_records` from Python)."""
from __future__ import annotations

import logging
import os
import shlex
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from qe.core.config import to_dict
from qe.core.jsonio import dumps
from qe.core.rundir import check_writable_dir
from qe.core.runtime import stderr_is_terminal
from qe.evaluation.analysis import Settings, analyse, build_eval_data, check_system_names
from qe.evaluation.content import content_errors, content_settings, make_matcher
from qe.evaluation.evaldata import check_rating_range, rating_scale
from qe.evaluation.scoring import (
    META_FILE, SCORES_FILE, EvaluationConfigError, collect_metrics, parse_scorer_specs,
)

log = logging.getLogger(__name__)


def settings_from_config(stats: Mapping[str, Any] | None) -> Settings:
    s = dict(stats or {})
    boot = dict(s.get("bootstrap") or {})
    perm = dict(s.get("permutation") or {})
    pw = dict(s.get("pairwise") or {})
    cf = s.get("confounds", {})
    cf = {"enabled": bool(cf)} if isinstance(cf, bool) else dict(cf or {})
    wmt = s.get("wmt", {})
    wmt = {"enabled": bool(wmt)} if isinstance(wmt, bool) else dict(wmt or {})
    rr = s.get("rating_range")
    kw = dict(
        methods=list(s.get("methods", ["pearson", "spearman", "kendall"])),
        protocols=list(s.get("protocols", ["none", "sys", "item"])),
        tails=int(s.get("tails", 2)), alpha=float(s.get("alpha", 0.05)), correction=str(s.get("correction", "holm")),
        seed=int(s.get("seed", 1234)),
        bootstrap_n=int(boot.get("n", 1000)), ci=float(boot.get("ci", 0.95)),
        bootstrap_methods=list(boot.get("methods", ["pearson"])),
        permutation_n=int(perm.get("n", 1000)), permutation_method=str(perm.get("method", "pearson")),
        williams=bool(s.get("williams", True)), min_group_size=int(s.get("min_group_size", 3)),
        rating_range=rating_scale(rr, "stats.rating_range"),
        round_to=(float(s["round_to"]) if s.get("round_to") else None),
        per_system=bool(s.get("per_system", True)), between_datasets=bool(s.get("between_datasets", True)),
        pairwise_test=str(pw.get("test", "wilcoxon")), pairwise_correction=str(pw.get("correction", "bonferroni")),
        pairwise_alpha=float(pw.get("alpha", 0.05)),
        confounds=bool(cf.get("enabled", True)), confound_method=str(cf.get("method", "spearman")),
        length_bins=int(cf.get("length_bins", 5)), flag_ratio=float(cf.get("flag_ratio", 0.5)),
        flag_length_rho=float(cf.get("flag_length_rho", 0.5)),
        sentence_splitter=str(cf.get("sentence_splitter", "pysbd")),
        system_sets={str(k): list(v) if not isinstance(v, str) else v for k, v in dict(s.get("system_sets") or {}).items()},
        significant_pairs=list(s.get("significant_pairs") or []),
        corpus_level=bool(s.get("corpus_level", True)),
        agreement_draws=int(dict(s.get("agreement") or {}).get("draws", 100)),
        wmt=bool(wmt.get("enabled", True)), spa_permutations=int(wmt.get("spa_permutations", 1000)),
        wmt_max_pairs=int(wmt.get("max_pairs", 100_000_000)),
        wmt_sample_pairs=int(wmt.get("sample_pairs", 5_000_000)),
    )
    try:
        return Settings(**kw)
    except ValueError as exc:
        raise EvaluationConfigError(str(exc)) from None


def _command(cfg, entry: str) -> str:
    if cfg.get("command"):
        return str(cfg.command)
    try:
        from hydra.core.hydra_config import HydraConfig

        overrides = list(HydraConfig.get().overrides.task)
    except Exception:  # not inside a Hydra run (compose API, tests)
        overrides = []
    return " ".join([entry] + [shlex.quote(o) for o in overrides])


#: the files a run writes at the top of its folder (report tables: qe.evaluation.report.TABLES; figures/ below it)
RUN_FILES = (SCORES_FILE, SCORES_FILE + ".tmp", META_FILE, META_FILE + ".tmp", "report.md", "config.yaml",
             "summary.json", "content_errors.csv")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def check_not_overwritten(path: str | Path, out_dir: str | Path, what: str) -> None:
    """An input file (``what``: the config key that names it) must not be a file the run writes into ``out_dir``
    (scores.jsonl, report.md, the CSV tables, ...): the run would overwrite its own input. Refused before anything
    is written, as ``qe score`` refuses ``-o`` naming its input."""
    from qe.evaluation.report import TABLES

    p, out = Path(str(path)).expanduser(), Path(str(out_dir)).expanduser()
    if not p.is_file():
        return
    written = [out / n for n in RUN_FILES] + [out / f"{stem}.csv" for stem, _ in TABLES]
    hit = next((w for w in written if _same_file(p, w)), None)
    if hit is None and (out / "figures").is_dir() and p.resolve().is_relative_to((out / "figures").resolve()):
        hit = out / "figures" / p.name
    if hit is not None:
        raise EvaluationConfigError(
            f"{what}={p} is the run's own {hit.relative_to(out)} in output_dir={out}: this run would overwrite its "
            "input; copy the file elsewhere, or choose another output_dir / hydra.run.dir")


def evaluate_records(records, out_dir: str | Path, *, scorers: Mapping[str, Any] | None = None,
                     models: Sequence[str] = (), metric_columns: Any = "all", ratings: Sequence[str] | None = None,
                     item_key: str | None = "mr", human_systems: Sequence[str] = (),
                     optional_human_systems: Sequence[str] = (), lower_is_better: Sequence[str] = (),
                     rating_range=None, stats: Mapping[str, Any] | None = None, plots: bool = True, dpi: int = 72,
                     dataset_name: str = "<records>", resume: bool = True, batch_size: int | None = None,
                     device: str | None = None, progress: bool = True, command: str | None = None,
                     title: str | None = None, metric_files: Mapping[str, Any] | None = None,
                     source: str | None = None, content: Mapping[str, Any] | bool | None = None,
                     data_dir: str | None = None) -> dict[str, Any]:
    """Score ``records`` (a list of :class:`qe.data.Record`), meta-evaluate every metric and write
    ``scores.jsonl``, ``report.md``, CSVs and figures into ``out_dir``. Returns paths and the results.

    ``human_systems`` must be systems of ``records`` (an unknown name is an error naming it);
    ``optional_human_systems`` are human when present and may be absent (said in the report's notes).
    ``rating_range`` (else ``stats.rating_range``): every rating must lie in it, or the error names the first record
    outside (``source``: where the records came from, for that message; default ``dataset_name``).
    ``content`` (``{enabled: true, lexicon: none}``): the "Content errors" section and ``content_errors.csv`` when
    records have MRs (:mod:`qe.evaluation.content`; ``lexicon``: none | e2e | sf | webnlg | a lexicon JSON file,
    read from ``data_dir`` for the named ones)."""
    from qe.evaluation.plots import plot_all
    from qe.evaluation.report import ReportWriter, write_outputs

    t0 = time.time()
    out = Path(out_dir)
    settings = settings_from_config(stats)
    scale, scale_key = rating_scale(rating_range, "dataset.rating_range"), "dataset.rating_range"
    if scale is None:
        scale, scale_key = settings.rating_range, "stats.rating_range"
    check_rating_range(records, scale, scale_key, ratings, source or dataset_name)  # before any scorer runs
    for label, spec in (metric_files or {}).items():
        p = spec.get("path") if isinstance(spec, Mapping) else spec
        if p:
            check_not_overwritten(p, out, f"metric_files.{label}")
    check_writable_dir(out, "output_dir")
    # misspelt system names fail before any scorer runs (analyse checks them again on the EvalData)
    optional = set(optional_human_systems or ())
    check_system_names({r.system if r.system is not None else "(none)" for r in records}, settings,
                       [x for x in human_systems or () if x not in optional])
    specs = parse_scorer_specs(scorers, list(models or []))
    csettings = content_settings(content)
    matcher = make_matcher(csettings["lexicon"], data_dir) if csettings["enabled"] else None  # before any scorer
    items = None
    if item_key:
        items = [getattr(r, item_key, None) if item_key in ("mr", "source", "id", "output") else r.extra.get(item_key)
                 for r in records]
    corpus: dict = {}
    metrics, info = collect_metrics(records, specs, out, columns=metric_columns, lower_is_better=lower_is_better,
                                    items=items, dataset_name=dataset_name, resume=resume, batch_size=batch_size,
                                    device=device, progress=progress, corpus=corpus, metric_files=metric_files)
    notes: list[str] = []
    data = build_eval_data(records, metrics, info, ratings=list(ratings) if ratings else None, item_key=item_key,
                           human_systems=human_systems, optional_human_systems=optional_human_systems,
                           rating_range=scale if scale_key == "dataset.rating_range" else None,
                           dataset_name=dataset_name,
                           confounds=settings.confounds, sentence_splitter=settings.sentence_splitter, corpus=corpus,
                           notes=notes, progress=progress)
    res = analyse(data, settings, progress=progress, notes=notes)
    figures = plot_all(data, out / "figures", dpi=dpi, seed=settings.seed) if plots else []
    tables = write_outputs(out, res)
    content_res = None
    if matcher is not None:
        content_res = content_errors(records, matcher, lexicon=str(csettings["lexicon"]))
    stale = out / "content_errors.csv"
    if content_res is not None:
        content_res.table.to_csv(stale, index=False)
        tables.append(stale)
    elif stale.is_file():  # a rerun into the folder without MRs (or with content disabled): no stale table
        stale.unlink()
    desc = ""
    writer = ReportWriter(data, res, title=title or f"Meta-evaluation report: {dataset_name}", command=command,
                          dataset_desc=desc, figures=figures, out_dir=out, elapsed_s=time.time() - t0,
                          content=content_res)
    report = out / "report.md"
    report.write_text(writer.render(), encoding="utf-8")
    return {"output_dir": out, "report": report, "scores": out / "scores.jsonl", "tables": tables,
            "figures": figures, "results": res, "data": data, "content": content_res,
            "signatures": {m: i.signature for m, i in info.items() if i.source == "scorer"}}


def run_evaluation(cfg, entry: str = "python evaluate.py") -> dict[str, Any]:
    """Everything ``evaluate.py`` / ``qe evaluate`` do, from a composed config (conf/evaluate.yaml)."""
    from omegaconf import OmegaConf

    from qe.data.datasets import load_dataset

    ds = cfg.dataset
    if ds.get("name") in (None, "", "???"):
        raise EvaluationConfigError("dataset.name is required (a registered dataset such as sample / emnlp17, or a "
                                    "path to a .jsonl / .csv file with dataset=file dataset.name=PATH)")
    from qe.data.datasets import available_datasets

    out_dir = Path(str(cfg.output_dir))
    if str(ds.name) not in available_datasets():  # a file: never one this run writes (scores.jsonl, report.md, ...)
        check_not_overwritten(str(ds.name), out_dir, "dataset.name")
    check_writable_dir(out_dir, "output_dir")
    data_dir = cfg.paths.get("data_dir") if "paths" in cfg else None
    options = to_dict(ds.get("options")) or {}
    options = {k: v for k, v in options.items() if v is not None}
    try:
        records = load_dataset(str(ds.name), data_dir=data_dir, **options)
    except KeyError as exc:
        raise EvaluationConfigError(f"dataset.name={ds.name!r}: {exc.args[0] if exc.args else exc}") from None
    scorers = to_dict(cfg.get("scorers")) or {}
    models = to_dict(cfg.get("models")) or []
    cols = cfg.get("metric_columns", "all")
    cols = None if cols is None else to_dict(cols)
    stats = to_dict(cfg.get("stats")) or {}
    ratings = to_dict(cfg.get("ratings")) or None
    try:
        resolved = OmegaConf.to_yaml(cfg, resolve=True)
    except Exception:  # ${hydra:...} interpolations only resolve inside a Hydra run (compose API)
        resolved = OmegaConf.to_yaml(cfg)
    (out_dir / "config.yaml").write_text(resolved, encoding="utf-8")
    command = _command(cfg, entry)
    label = ds.get("label") or ds.name
    result = evaluate_records(
        records, out_dir, scorers=scorers, models=models, metric_columns=cols, ratings=ratings,
        item_key=ds.get("item_key"), human_systems=list(ds.get("human_systems") or []),
        optional_human_systems=list(ds.get("optional_human_systems") or []),
        lower_is_better=list(ds.get("lower_is_better") or []),
        rating_range=list(ds.rating_range) if ds.get("rating_range") else None, stats=stats,
        plots=bool(cfg.plots.enabled) if "plots" in cfg else True, dpi=int(cfg.plots.get("dpi", 72)) if "plots" in cfg else 72,
        dataset_name=str(label), resume=bool(cfg.get("resume", True)), batch_size=cfg.get("batch_size"),
        device=cfg.get("device"), progress=bool(cfg.get("progress", True)) and stderr_is_terminal(), command=command,
        title=cfg.get("title"), metric_files=to_dict(cfg.get("metric_files")) or None, source=str(ds.name),
        content=to_dict(cfg.get("content")) if cfg.get("content") is not None else None,
        data_dir=str(data_dir) if data_dir else None)
    for m, sig in result["signatures"].items():
        print(f"{m}: {sig}")
    print(f"scores: {result['scores']}\nreport: {result['report']}")
    summary = {"output_dir": str(out_dir), "report": str(result["report"]), "scores": str(result["scores"]),
               "metrics": list(result["data"].metrics), "records": result["data"].n}
    (out_dir / "summary.json").write_text(dumps(summary, indent=2), encoding="utf-8")
    return result
