"""Score a rated dataset with several scorers, checkpointing after each one, and collect the metric table.

A *metric* in a meta-evaluation is either

* a **scorer** -- anything :func:`qe.load` accepts (a registered name such as ``bleu-4`` or an export
  directory), given by a :class:`ScorerSpec`; composite scorers may contribute their components; or
* a **column** -- a precomputed score shipped inside the records (``record.metrics``, e.g. EMNLP17's BLEU /
  METEOR / TER columns), used as a pseudo-metric.

``scores.jsonl`` (one line per record: id, system, dataset, item, ratings, scores; strict JSON -- a missing (NaN)
score or rating is ``null``, an infinite one ``"inf"`` / ``"-inf"``, :func:`qe.data.record.dumps`) and ``scores.meta.json``
(per metric: where it came from, its signature, its orientation) are rewritten atomically after each scorer, so
a crash loses at most the scorer that was running; with ``resume=True`` a rerun into the same directory reuses
every finished scorer whose spec (model + options) and record ids are unchanged.

Corpus-level scores: for a scorer whose ``corpus_score`` pools statistics over a set (``CORPUS == "pooled"``:
BLEU, chrF, TER, NIST), the score of each system's outputs (per dataset) is computed as well and kept in
``scores.meta.json`` (``corpus``), for the system level "corpus score" protocol.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from qe.core.inputs import scorer_inputs
from qe.core.signature import Signature
from qe.data.record import Record, dumps
from qe.errors import MissingInputError, QEError

log = logging.getLogger(__name__)

SCORES_FILE = "scores.jsonl"
META_FILE = "scores.meta.json"


class EvaluationConfigError(QEError, ValueError):
    """The evaluation config asks for something that does not exist (scorer, rating column, field)."""


@dataclass
class ScorerSpec:
    #: column name in tables and in scores.jsonl
    label: str
    #: registered scorer name or export directory (anything qe.load accepts)
    model: str
    options: dict[str, Any] = field(default_factory=dict)
    #: also (or instead) evaluate the scorer's components (composite scorers: GRUEN, DiscoScore, ...)
    components: bool = False
    #: override the scorer's own ``higher_is_better`` (bool, or {component: bool})
    higher_is_better: Any = None
    batch_size: int | None = None

    def key(self) -> str:
        return json.dumps({"model": self.model, "options": self.options, "components": self.components},
                          sort_keys=True, default=str)


@dataclass
class MetricInfo:
    name: str
    #: "scorer", "column" (shipped in the records) or "file" (metric_files)
    source: str
    higher_is_better: bool = True
    signature: str = ""
    model: str | None = None


def _label_for(model: str) -> str:
    """A registered name labels itself; an export directory is labelled by its folder name, or by
    ``<parent>/export`` for the ``.../<run>/export`` folders that train.py writes."""
    p = Path(model.rstrip("/" + os.sep))
    if not (p.is_dir() or "/" in model or os.sep in model):
        return model
    return f"{p.parent.name}/{p.name}" if p.name == "export" and p.parent.name else p.name


def parse_scorer_specs(scorers: Mapping[str, Any] | None, models: Sequence[str] | None = None) -> list[ScorerSpec]:
    """Specs from the config: ``scorers`` maps label -> {model, options, components, higher_is_better,
    batch_size} (or label -> "model" for short); ``models`` is a plain list of names / export paths whose label
    is the name (or the export directory's name)."""
    out: list[ScorerSpec] = []
    allowed = {"model", "options", "components", "higher_is_better", "batch_size"}
    for label, spec in (scorers or {}).items():
        if spec is None:
            continue
        if isinstance(spec, str):
            spec = {"model": spec}
        spec = dict(spec)
        unknown = set(spec) - allowed
        if unknown:
            raise EvaluationConfigError(f"scorers.{label}: unknown key(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
        if not spec.get("model"):
            raise EvaluationConfigError(f"scorers.{label}: 'model' (a registered scorer name or an export directory) is required")
        out.append(ScorerSpec(label=str(label), model=str(spec["model"]), options=dict(spec.get("options") or {}),
                              components=bool(spec.get("components", False)),
                              higher_is_better=spec.get("higher_is_better"), batch_size=spec.get("batch_size")))
    for m in models or []:
        out.append(ScorerSpec(label=_label_for(str(m)), model=str(m)))
    labels = [s.label for s in out]
    dup = {x for x in labels if labels.count(x) > 1}
    if dup:
        raise EvaluationConfigError(f"two scorers share the label(s) {sorted(dup)}; give them distinct labels under scorers.<label>")
    return out


def load_scorer(spec: ScorerSpec, device: str | None = None):
    """``qe.load`` with a message that names the config entry when the scorer does not exist."""
    from qe.registry import load_on_device

    opts = dict(spec.options)
    try:
        return load_on_device(spec.model, device, **opts)
    except KeyError as exc:
        msg = exc.args[0] if exc.args else str(exc)
        raise EvaluationConfigError(f"scorer {spec.label!r}: {msg}") from None
    except TypeError as exc:
        raise EvaluationConfigError(f"scorer {spec.label!r} ({spec.model}): bad options {opts}: {exc}") from None


def _inputs_for(scorer, spec: ScorerSpec, records: Sequence[Record], dataset_name: str) -> dict[str, Any]:
    """The ``mrs`` / ``refs`` / ``sources`` the scorer needs (:func:`qe.core.inputs.scorer_inputs`); a record that
    lacks one is a configuration error naming the scorer's label, the dataset and the record."""
    try:
        return scorer_inputs(scorer, records, where=f"dataset {dataset_name!r}")
    except MissingInputError as exc:
        raise EvaluationConfigError(f"scorer {spec.label!r} ({spec.model}): {exc}") from None


def _orientation(spec: ScorerSpec, scorer, component: str | None) -> bool:
    h = spec.higher_is_better
    if isinstance(h, Mapping):
        if component is not None and component in h:
            return bool(h[component])
        h = None
    if h is not None:
        return bool(h)
    if component is not None and component.lower() in ("ppl", "perplexity"):
        return False
    return bool(getattr(scorer, "higher_is_better", True))


def ids_digest(records: Sequence[Record]) -> str:
    h = hashlib.sha256()
    for r in records:
        h.update(r.id.encode("utf-8") + b"\0")
    return h.hexdigest()[:16]


def _clean(v: float) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


UNIT_SEP = "\x1f"


def unit_of(r: Record, dataset_name: str) -> tuple[str, str]:
    """The (dataset, system) unit of a record, as the analysis names it."""
    return (r.dataset if r.dataset is not None else dataset_name, r.system if r.system is not None else "(none)")


def corpus_scores(scorer, records: Sequence[Record], kw: Mapping[str, Any], dataset_name: str) -> dict[tuple[str, str], float]:
    """``scorer.corpus_score`` of the outputs of each (dataset, system) unit, for scorers with a pooled corpus-level
    definition (``CORPUS == "pooled"``); {} for the others (their corpus score is the mean of sentence scores)."""
    if getattr(scorer, "CORPUS", "mean") != "pooled" or not hasattr(scorer, "corpus_score"):
        return {}
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(records):
        groups.setdefault(unit_of(r, dataset_name), []).append(i)
    refs = kw.get("refs")
    out = {}
    for unit, idx in groups.items():
        out[unit] = float(scorer.corpus_score([records[i].output for i in idx], [refs[i] for i in idx]))
    return out


def write_scores(out_dir: Path, records: Sequence[Record], items: Sequence[str | None],
                 metrics: Mapping[str, np.ndarray], info: Mapping[str, MetricInfo],
                 specs_done: Mapping[str, str], digest: str,
                 corpus: Mapping[str, Mapping[tuple[str, str], float]] | None = None) -> None:
    """Atomically (temp file + rename) write scores.jsonl and scores.meta.json."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / (SCORES_FILE + ".tmp")
    names = list(metrics)
    with open(tmp, "w", encoding="utf-8") as f:
        for i, r in enumerate(records):
            row = {"id": r.id, "system": r.system, "dataset": r.dataset, "item": items[i],
                   "ratings": {k: _clean(v) for k, v in r.ratings.items()},
                   "scores": {n: _clean(float(metrics[n][i])) for n in names}}
            f.write(dumps(row) + "\n")  # strict JSON: NaN -> null, +-inf -> "inf" / "-inf"
    tmp.replace(out_dir / SCORES_FILE)
    meta = {"records": len(records), "ids_sha256": digest,
            "metrics": {n: {"source": info[n].source, "higher_is_better": info[n].higher_is_better,
                            "signature": info[n].signature, "model": info[n].model} for n in names},
            "scorer_specs": dict(specs_done),
            "corpus": {m: {UNIT_SEP.join(u): _clean(v) for u, v in t.items()} for m, t in (corpus or {}).items()}}
    tmpm = out_dir / (META_FILE + ".tmp")
    tmpm.write_text(dumps(meta, indent=2), encoding="utf-8")
    tmpm.replace(out_dir / META_FILE)


def _read_previous(out_dir: Path, digest: str) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
    sp, mp = out_dir / SCORES_FILE, out_dir / META_FILE
    if not (sp.is_file() and mp.is_file()):
        return None
    try:
        meta = json.loads(mp.read_text(encoding="utf-8"))
        if meta.get("ids_sha256") != digest:
            log.warning("%s: written for other records; scoring from scratch", sp)
            return None
        cols: dict[str, list[float]] = {n: [] for n in meta["metrics"]}
        with open(sp, encoding="utf-8") as f:
            for line in f:
                s = json.loads(line)["scores"]
                for n in cols:
                    v = s.get(n)
                    cols[n].append(math.nan if v is None else float(v))
        return {n: np.asarray(v, float) for n, v in cols.items()}, meta
    except (OSError, ValueError, KeyError) as exc:
        log.warning("%s: unreadable checkpoint (%s); scoring from scratch", sp, exc)
        return None


def _keep_dropped(out_dir: Path, meta: dict[str, Any], labels: set[str]) -> None:
    """Finished scores in ``out_dir`` of scorers this run does not name would vanish when this run writes its
    checkpoint: copy the previous ``scores.jsonl`` / ``scores.meta.json`` to ``scores.previous.*`` first and say so."""
    import shutil

    dropped = sorted(lbl for lbl in (meta.get("scorer_specs") or {}) if lbl not in labels)
    if not dropped:
        return
    k = 1  # an earlier copy is never overwritten: scores.previous.jsonl, scores.previous2.jsonl, ...
    while (out_dir / SCORES_FILE.replace("scores.", f"scores.previous{k if k > 1 else ''}.", 1)).exists():
        k += 1
    tag = f"scores.previous{k if k > 1 else ''}."
    for name in (SCORES_FILE, META_FILE):
        src = out_dir / name
        if src.is_file():
            shutil.copy2(src, out_dir / name.replace("scores.", tag, 1))
    log.warning("%s holds finished scores of %s, which this run does not name: this run's scores.jsonl will not "
                "carry them; the previous files are kept as %s (name every scorer, or use another output_dir, to "
                "keep them in one report)", out_dir / SCORES_FILE, ", ".join(dropped),
                out_dir / SCORES_FILE.replace("scores.", tag, 1))


def read_metric_file(label: str, spec: Any, records: Sequence[Record]) -> tuple[np.ndarray, str]:
    """Scores computed elsewhere (e.g. cross-validated predictions: each output scored by a model that never saw
    it), joined to ``records`` by id. ``spec``: a path, or ``{path, field: score, id_field: id, filter: {col:
    value}, reduce: error|mean}``; the file is ``.jsonl`` or ``.csv``. ``filter`` keeps rows whose columns equal
    the values (e.g. ``{seed: 1}``); after it, an id seen twice is an error unless ``reduce: mean`` (average of its
    rows). Every record needs a row (the error names the first ids without one); rows for ids not in the records
    are ignored. Returns (scores in record order, signature)."""
    import json

    spec = {"path": spec} if isinstance(spec, (str, Path)) else dict(spec or {})
    if not spec.get("path"):
        raise EvaluationConfigError(f"metric_files.{label}: give a path (or {{path: ..., field: ...}})")
    path = Path(str(spec["path"])).expanduser()
    field_, id_field = str(spec.get("field", "score")), str(spec.get("id_field", "id"))
    flt = {str(k): v for k, v in (spec.get("filter") or {}).items()}
    reduce = str(spec.get("reduce", "error"))
    if reduce not in ("error", "mean"):
        raise EvaluationConfigError(f"metric_files.{label}.reduce={reduce!r}: use error or mean")
    if not path.is_file():
        raise EvaluationConfigError(f"metric_files.{label}: {path} is not a file")
    from qe.data.record import read_csv_rows, read_text

    rows: list[tuple[str, dict]] = []
    text = read_text(path)  # UTF-8, byte-order mark dropped; the file and line of a bad byte named
    if path.suffix == ".csv":
        rows = [(f"{path}:{n}", row) for n, row in read_csv_rows(text, str(path))[1]]
    else:
        for n, line in enumerate(text.split("\n"), 1):
            if line.strip():
                try:
                    rows.append((f"{path}:{n}", json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise EvaluationConfigError(f"{path}:{n}: not JSON ({exc.msg})") from None
    got: dict[str, list[float]] = {}
    for where, row in rows:
        if any(str(row.get(k)) != str(v) for k, v in flt.items()):
            continue
        if id_field not in row or field_ not in row:
            raise EvaluationConfigError(f"{where}: row lacks {id_field!r} or {field_!r} (has {sorted(row)})")
        try:
            v = float(row[field_])
        except (TypeError, ValueError):
            raise EvaluationConfigError(f"{where}: field {field_!r} = {row[field_]!r} is not a number") from None
        got.setdefault(str(row[id_field]), []).append(v)
    dup = [k for k, v in got.items() if len(v) > 1]
    if dup and reduce == "error":
        raise EvaluationConfigError(f"metric_files.{label}: id {dup[0]!r} has {len(got[dup[0]])} rows in {path} "
                                    f"(and {len(dup) - 1} more ids); narrow them with filter or set reduce: mean")
    missing = [r.id for r in records if r.id not in got]
    if missing:
        raise EvaluationConfigError(f"metric_files.{label}: {len(missing)} of {len(records)} records have no row in "
                                    f"{path} (first: {missing[:3]})")
    vals = np.array([float(np.mean(got[r.id])) for r in records], float)
    desc = f"{label}|file:{path.name}|field:{field_}" + (f"|filter:{flt}" if flt else "") + \
        (f"|reduce:{reduce}" if dup else "")
    return vals, desc


def collect_metrics(records: Sequence[Record], specs: Sequence[ScorerSpec], out_dir: str | Path, *,
                    columns: str | Sequence[str] | None = "all", lower_is_better: Sequence[str] = (),
                    items: Sequence[str | None] | None = None, dataset_name: str = "<dataset>",
                    resume: bool = True, batch_size: int | None = None, device: str | None = None,
                    progress: bool = True, corpus: dict | None = None,
                    metric_files: Mapping[str, Any] | None = None,
                    ) -> tuple[dict[str, np.ndarray], dict[str, MetricInfo]]:
    """Run every scorer over ``records`` (checkpointing after each) and add the shipped metric columns and the
    ``metric_files`` (:func:`read_metric_file`).

    Returns (metric name -> scores in record order, metric name -> :class:`MetricInfo`). ``corpus``, when given,
    is filled with metric name -> {(dataset, system): corpus-level score} (:func:`corpus_scores`).
    """
    from tqdm.auto import tqdm

    out_dir = Path(out_dir)
    items = list(items) if items is not None else [None] * len(records)
    metrics: dict[str, np.ndarray] = {}
    info: dict[str, MetricInfo] = {}
    lower = set(lower_is_better or ())

    # 1. precomputed columns shipped in the records
    present: list[str] = []
    for r in records:
        for k in r.metrics:
            if k not in present:
                present.append(k)
    if columns in (None, "none", False) or columns == []:
        wanted: list[str] = []
    elif columns == "all":
        wanted = present
    else:
        wanted = [str(c) for c in columns]
        missing = [c for c in wanted if c not in present]
        if missing:
            raise EvaluationConfigError(f"metric column(s) {missing} not in dataset {dataset_name!r}; "
                                        f"its records ship: {present or '(none)'}")
    for c in wanted:
        metrics[c] = np.array([r.metrics.get(c, math.nan) for r in records], float)
        info[c] = MetricInfo(c, "column", c not in lower, f"{c}|precomputed column shipped with {dataset_name}")
    # 1b. scores computed elsewhere, joined by record id (metric_files)
    for label, spec in (metric_files or {}).items():
        if label in metrics:
            raise EvaluationConfigError(f"metric_files.{label}: a metric of that name exists already")
        vals, desc = read_metric_file(label, spec, records)
        metrics[label] = vals
        info[label] = MetricInfo(label, "file", label not in lower, desc)

    # 2. scorers, with checkpoint / resume
    digest = ids_digest(records)
    prev = _read_previous(out_dir, digest) if resume else None
    if prev is not None:
        _keep_dropped(out_dir, prev[1], {spec.label for spec in specs})
    specs_done: dict[str, str] = {}
    corpus = {} if corpus is None else corpus
    texts = [r.output for r in records]
    bar = tqdm(specs, desc="scorers", unit="scorer", disable=not progress or len(specs) < 2)
    for spec in bar:
        bar.set_postfix_str(spec.label)
        scorer = None
        if prev is not None and prev[1].get("scorer_specs", {}).get(spec.label) == spec.key():
            pm = prev[1]["metrics"]
            names = [n for n, m in pm.items() if m.get("source") == "scorer" and
                     (n == spec.label or n.startswith(spec.label + "."))]
            reuse = bool(names) and all(n in prev[0] for n in names)
            if reuse:
                # the same config entry may now be another scorer (an upgraded qe, a mined lexicon, new weights):
                # its finished scores are reused only where its signature is the one they were made with
                try:
                    scorer = load_scorer(spec, device)
                except Exception as exc:  # not loadable here (weights elsewhere): its finished scores still stand
                    log.warning("scorer %s: cannot load it to check that the scores in %s are its own (%s); reusing "
                                "them as they are", spec.label, out_dir / SCORES_FILE, exc)
                else:
                    made_by = pm[names[0]]["signature"]
                    fit = getattr(scorer, "signature_for", None)
                    now = Signature.of(fit(made_by) if fit is not None else scorer.signature)
                    stale = next((n for n in names if pm[n]["signature"] != (
                        now if n == spec.label else now.with_fields(component=n[len(spec.label) + 1:]))), None)
                    if stale is not None:
                        reuse = False
                        log.warning("scorer %s: the scores in %s were made by %s; this scorer is %s: scoring again",
                                    spec.label, out_dir / SCORES_FILE, pm[stale]["signature"], now)
            if reuse:
                for n in names:
                    metrics[n] = prev[0][n]
                    info[n] = MetricInfo(n, "scorer", bool(pm[n]["higher_is_better"]), pm[n]["signature"],
                                         pm[n].get("model"))
                    if n in (prev[1].get("corpus") or {}):
                        corpus[n] = {tuple(k.split(UNIT_SEP, 1)): (math.nan if v is None else float(v))
                                     for k, v in prev[1]["corpus"][n].items()}
                specs_done[spec.label] = spec.key()
                log.info("scorer %s: reused finished scores from %s", spec.label, out_dir / SCORES_FILE)
                continue
        scorer = scorer if scorer is not None else load_scorer(spec, device)
        kw = _inputs_for(scorer, spec, records, dataset_name)
        log.info("scorer %s: scoring %d outputs (%s)", spec.label, len(texts), scorer.signature)
        t_scorer = time.perf_counter()
        bs = spec.batch_size or batch_size
        if spec.components:
            comps = scorer.score_components(texts, batch_size=bs, progress=progress, **kw)
            sig = scorer.signature  # after scoring: it may name what the inputs picked (lexicon=auto[sf:...])
            for cname, vals in comps.items():
                n = f"{spec.label}.{cname}"
                metrics[n] = np.asarray(vals, float)
                info[n] = MetricInfo(n, "scorer", _orientation(spec, scorer, cname), Signature.of(sig).with_fields(component=cname), spec.model)
        else:
            metrics[spec.label] = np.asarray(scorer.score(texts, batch_size=bs, progress=progress, **kw), float)
            sig = scorer.signature
            info[spec.label] = MetricInfo(spec.label, "scorer", _orientation(spec, scorer, None), sig, spec.model)
            cs = corpus_scores(scorer, records, kw, dataset_name)
            if cs:
                corpus[spec.label] = cs
        specs_done[spec.label] = spec.key()
        write_scores(out_dir, records, items, metrics, info, specs_done, digest, corpus)  # checkpoint
        log.info("scorer %s: done in %.1f s; scores checkpointed to %s", spec.label, time.perf_counter() - t_scorer,
                 out_dir / SCORES_FILE)
        del scorer
    write_scores(out_dir, records, items, metrics, info, specs_done, digest, corpus)
    return metrics, info
