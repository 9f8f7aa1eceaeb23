"""Training of the learned aligner (``qe train task=content_aligner``): the LightningModule, the builder and the
export (kind ``content_aligner``, read by :class:`qe.content.aligner.Aligner`).

Data (``conf/data/content_aligner.yaml``): (MR, text) rows whose ``mr`` lists what the text realises - the cleaned
E2E development references by default (``source: e2e``; the data folder has no E2E training split), or a CSV with
columns ``mr``, ``ref`` and optionally ``orig_mr``. Rows are split into ``folds`` by MR (``orig_mr`` when given:
:func:`qe.content.aligner_data.fold_of`, the split of ``experiments.content_e2e``); ``held_out`` folds are left out
entirely, so the export can be measured on them. Of the rest, ``val_fraction`` of the MR groups validate (loss,
accuracy, MCC on their generated labels) and, when they have ``orig_mr``, choose per mode of the engine the
threshold on P(realised) (the best omission F1 against the cleaned annotation) and whether to ask about additions
(:func:`calibrate`). A matcher with a lexicon mined
from the training rows alone locates the facts the synthetic errors act on
(:func:`~qe.content.aligner_data.make_examples`).

The module is :class:`qe.hf.classifier.SequenceClassifierModule` (an HF encoder with a sequence-classification
head, AdamW with warm-up and linear decay; shared with GRUEN's classifiers) with three labels and its own export.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from omegaconf import DictConfig

from qe.content.aligner_data import LABELS, Inventory, f1, fold_of, gold_counts, make_examples
from qe.core.config import conf_defaults
from qe.hf.classifier import SequenceClassifierModule, float_metrics
from qe.hf.classifier import tokenizer_for as _tokenizer
from qe.training import TaskParts, instantiate_model, plain_config

log = logging.getLogger(__name__)

ALIGNER = conf_defaults("model/hf_encoder", "model/minilm", "task/content_aligner:model")
#: P(realised) thresholds tried on the validation rows
THRESHOLDS = tuple(round(x, 2) for x in np.arange(0.05, 0.96, 0.05))


class ContentAlignerModule(SequenceClassifierModule):
    """Encoder + 3-way head over ``query [SEP] output`` (:data:`~qe.content.aligner_data.LABELS`); export kind
    ``content_aligner``."""

    def __init__(self, encoder: str = ALIGNER["encoder"], num_labels: int = len(LABELS), lr: float = ALIGNER["lr"],
                 weight_decay: float = ALIGNER["weight_decay"], warmup_ratio: float = ALIGNER["warmup_ratio"],
                 val_names: Sequence[str] = ("val",), dropout: float | None = None,
                 train_layers: int = ALIGNER["train_layers"], pooling: str = "cls", head_lr: float | None = None):
        super().__init__(encoder, num_labels, lr, weight_decay, warmup_ratio, val_names, dropout, train_layers,
                         pooling, head_lr)

    def export(self, dest, *, datamodule=None, metrics=None, cfg=None) -> Path:
        from qe.content.aligner import Aligner, save_export

        info = datamodule.aligner_info
        config: dict[str, Any] = {"labels": list(LABELS), "max_length": int(datamodule.max_length),
                                  "encoder": str(self.hparams.encoder), "inventory": info["inventory"].to_dict(),
                                  "query": "slot words : value", "output": "norm_tokens joined by spaces"}
        if info.get("triples"):  # trained on RDF triples only (data.source=webnlg): slots keep the matcher's verdicts
            from qe.content.aligner_triples import QUERY_FORMAT

            config.update(facts="triples", query_triples=QUERY_FORMAT)
        metrics = dict(metrics or {})
        was_training = self.training
        aligner = Aligner(self.model, datamodule.tokenizer, config, device=str(self.device))
        if info.get("triples"):
            from qe.content.aligner_triples import calibrate_triples

            cal = calibrate_triples(aligner, info["val_examples"])
        else:
            cal = calibrate(aligner, info["matcher"], info["val_rows"])
        self.train(was_training)
        config.update(thresholds=cal["thresholds"], additions=cal["additions"], threshold_from=cal["why"],
                      calibration=cal["table"])
        metrics.update(cal["metrics"])
        config["train"] = plain_config(cfg) if cfg is not None else {}
        return save_export(Path(dest), self.model, datamodule.tokenizer, config=config,
                           data=dict(getattr(datamodule, "data_info", {}) or {}), metrics=float_metrics(metrics))


def _figures(rows: list[dict], als) -> tuple[float, float]:
    """(omission F1, addition F1) of alignments of ``rows`` against their cleaned MRs."""
    c: dict[str, int] = {}
    for r, al in zip(rows, als):
        per, _ = gold_counts(r["orig_mr"], r["mr"], al)
        for cnt in per.values():
            for k, v in cnt.items():
                c[k] = c.get(k, 0) + v
    return (f1(c.get("omit_tp", 0), c.get("omit_fp", 0), c.get("omit_fn", 0)),
            f1(c.get("add_tp", 0), c.get("add_fp", 0), c.get("add_fn", 0)))


def calibrate(aligner, matcher, rows: list[dict]) -> dict[str, Any]:
    """Per mode of :class:`~qe.content.aligner.AlignedMatcher`: the P(realised) threshold of :data:`THRESHOLDS`
    with the best omission F1 on ``rows`` (those with ``orig_mr``; ties: the one nearest 0.5), then whether asking
    about additions raises the addition F1 there. Without such rows: 0.5 and additions on. Also the figures of each
    choice and of the matcher alone (``val/...`` metrics)."""
    from qe.content.aligner import MODES, AlignedMatcher

    rows = [r for r in rows if r.get("orig_mr")]
    if not rows:
        return {"thresholds": {m: 0.5 for m in MODES}, "additions": {m: True for m in MODES}, "table": {},
                "metrics": {}, "why": "defaults (no validation rows with orig_mr)"}
    mrs, refs = [r["orig_mr"] for r in rows], [r["ref"] for r in rows]
    matched = [matcher.align(mr, o) for mr, o in zip(mrs, refs)]
    m_omit, m_add = _figures(rows, matched)
    out: dict[str, Any] = {"thresholds": {}, "additions": {}, "table": {},
                           "metrics": {"val/omission_f1_matcher": m_omit, "val/addition_f1_matcher": m_add}}
    for mode in MODES:
        table = {}
        for t in THRESHOLDS:
            eng = AlignedMatcher(matcher, aligner, mode, additions=False, threshold=t)
            table[t] = _figures(rows, eng.align_many(mrs, refs, matched=matched))[0]
        best = max(table, key=lambda t: (round(table[t], 6), -abs(t - 0.5)))
        without = _figures(rows, AlignedMatcher(matcher, aligner, mode, False, best).align_many(mrs, refs,
                                                                                                 matched=matched))
        with_add = _figures(rows, AlignedMatcher(matcher, aligner, mode, True, best).align_many(mrs, refs,
                                                                                                 matched=matched))
        add = with_add[1] > without[1]
        out["thresholds"][mode], out["additions"][mode] = best, add
        out["table"][mode] = {str(t): round(v, 4) for t, v in table.items()}
        out["metrics"].update({f"val/omission_f1_{mode}": table[best],
                               f"val/addition_f1_{mode}": (with_add if add else without)[1]})
        log.info("aligner, mode %s: threshold %.2f, additions %s (omission F1 %.3f, addition F1 %.3f; matcher %.3f, "
                 "%.3f; %d validation rows)", mode, best, add, table[best], (with_add if add else without)[1],
                 m_omit, m_add, len(rows))
    out["why"] = (f"per mode, the best omission F1 (then addition F1: additions on or off) on {len(rows)} held-out "
                  "training rows")
    return out


#: ``data.source=sample``: E2E-style (MR, text, MR written for) rows written for this project (names invented)
SAMPLE = Path(__file__).resolve().parents[1] / "resources" / "content_sample.csv"
#: ``data.source=sample-triples``: WebNLG-style (triples, text) rows written for this project (entities and facts
#: invented), one JSON object a line with ``triples`` (``[[s, p, o], ...]``) and ``ref``
SAMPLE_TRIPLES = SAMPLE.with_name("content_sample_triples.jsonl")


def read_triple_rows(path: Path = SAMPLE_TRIPLES) -> list[dict]:
    """Rows ``{"mr", "ref", "triples"}`` (as :func:`~qe.content.aligner_triples.rows_from_entries` makes them) of a
    JSONL file of ``{"triples": [[s, p, o], ...], "ref": text}`` objects."""
    from qe.data.record import jsonl_objects, read_text
    from qe.data.webnlg import triples_mr
    from qe.errors import RecordError

    rows = []
    for i, obj in jsonl_objects(read_text(path), str(path)):
        triples = obj.get("triples")
        if not isinstance(obj.get("ref"), str) or not isinstance(triples, list) or not triples or not all(
                isinstance(t, list) and len(t) == 3 and all(isinstance(x, str) for x in t) for t in triples):
            raise RecordError(f"{path}:{i}: a row needs 'triples' (a list of [subject, property, object] strings) "
                              "and a string 'ref'")
        rows.append({"mr": triples_mr(triples), "ref": obj["ref"].strip(), "triples": [tuple(t) for t in triples]})
    return rows


def read_rows(source: str, data_dir: str | None = None) -> list[dict[str, str]]:
    """``e2e``: the cleaned E2E dev rows (``mr``, ``ref``, ``orig_mr``); ``sample``: the 24 E2E-style rows shipped
    in the package (:data:`SAMPLE`, invented venues; for smoke runs and the zoo's test recipe); else a CSV file with
    columns ``mr``, ``ref`` and optionally ``orig_mr``."""
    if str(source) == "e2e":
        from qe.data.e2e import e2e_slot_gold

        return e2e_slot_gold("dev", data_dir)
    from qe.data.record import read_csv_rows, read_text
    from qe.core.paths import require

    path = SAMPLE if str(source) == "sample" else \
        require(Path(str(source)).expanduser(), f"aligner training pairs ({source})")
    _, rows = read_csv_rows(read_text(path), str(path), required=("mr", "ref"))
    out = []
    for _, row in rows:
        d = {"mr": row["mr"].strip(), "ref": row["ref"].strip()}
        if (row.get("orig_mr") or "").strip():
            d["orig_mr"] = row["orig_mr"].strip()
        out.append(d)
    return out


def split_rows(rows: list[dict], folds: int, seed: int, held_out: Sequence[int], val_fraction: float
               ) -> tuple[list[dict], list[dict]]:
    """(training rows, validation rows): rows of ``held_out`` folds dropped, then ``val_fraction`` of the remaining
    MR groups set apart (at least one group when there are two or more)."""
    key = lambda r: r.get("orig_mr") or r["mr"]  # noqa: E731
    fo = fold_of([key(r) for r in rows], folds, seed)
    bad = [k for k in held_out if not 0 <= int(k) < folds]
    if bad:
        raise ValueError(f"data.held_out={list(held_out)}: folds are 0..{folds - 1}")
    kept = [r for r in rows if fo[key(r)] not in set(int(k) for k in held_out)]
    groups = sorted({key(r) for r in kept})
    n_val = min(len(groups) - 1, max(1, round(val_fraction * len(groups)))) if len(groups) > 1 and val_fraction else 0
    rng = np.random.default_rng(seed + 1)
    val_groups = set(np.array(groups, dtype=object)[rng.permutation(len(groups))[:n_val]].tolist()) if n_val else set()
    return [r for r in kept if key(r) not in val_groups], [r for r in kept if key(r) in val_groups]


def build_content_aligner(cfg: DictConfig) -> TaskParts:
    from qe.content import Matcher, mine
    from qe.hf.data import TextClassificationDataModule

    d = cfg.data
    if str(d.source) in ("webnlg", "sample-triples"):
        return build_triples(cfg)
    rows = read_rows(str(d.source), cfg.paths.data_dir)
    held_out = [int(k) for k in (d.get("held_out") or [])]
    train_rows, val_rows = split_rows(rows, int(d.folds), int(d.fold_seed), held_out, float(d.val_fraction))
    if not train_rows:
        raise ValueError(f"content_aligner: no training rows left (source {d.source}, held_out {held_out})")
    lexicon = mine([(r["mr"], r["ref"]) for r in train_rows], source="aligner-train", min_count=int(d.min_count))
    matcher = Matcher(lexicon)
    inventory = Inventory.from_rows(train_rows)
    kw = dict(synthetic=bool(d.synthetic), real_errors=bool(d.real_errors), slot_queries=bool(d.slot_queries),
              p_entity=float(d.p_entity))
    train = make_examples(train_rows, matcher, inventory, np.random.default_rng(int(cfg.seed)), **kw)
    val = make_examples(val_rows, matcher, inventory, np.random.default_rng(int(cfg.seed) + 1), **kw)
    rng = np.random.default_rng(int(cfg.seed) + 2)
    if d.get("max_train") and len(train) > int(d.max_train):
        train = [train[i] for i in sorted(rng.choice(len(train), int(d.max_train), replace=False))]
    if d.get("max_val") and len(val) > int(d.max_val):
        val = [val[i] for i in sorted(rng.choice(len(val), int(d.max_val), replace=False))]
    if not val:  # a tiny source: validate on the training pairs rather than on nothing
        val = train[: max(1, len(train) // 5)]
    tok = _tokenizer(cfg.model.encoder)
    dm = TextClassificationDataModule(tok, ([e.pair for e in train], [e.label for e in train]),
                                      {"val": ([e.pair for e in val], [e.label for e in val])},
                                      batch_size=int(d.batch_size), max_length=int(d.max_length),
                                      num_workers=int(d.get("num_workers", 0)), seed=int(cfg.seed))
    counts: dict[str, int] = {}
    for e in train:
        k = f"{e.kind}_{LABELS[e.label]}"
        counts[k] = counts.get(k, 0) + 1
    dm.data_info = {"name": "e2e-dev-cleaned" if str(d.source) == "e2e" else Path(str(d.source)).name,
                    "rows": len(rows), "train_rows": len(train_rows), "val_rows": len(val_rows),
                    "train_pairs": len(train), "val_pairs": len(val), "folds": int(d.folds),
                    "fold_seed": int(d.fold_seed), "held_out": held_out,
                    **{f"pairs_{k}": v for k, v in sorted(counts.items())}}
    dm.aligner_info = {"inventory": inventory, "matcher": matcher, "val_rows": val_rows}
    log.info("content_aligner: %d training rows -> %d pairs %s; %d validation rows -> %d pairs", len(train_rows),
             len(train), counts, len(val_rows), len(val))
    module = instantiate_model(cfg.model, num_labels=len(LABELS), val_names=["val"])
    return TaskParts(module=module, datamodule=dm, demo=_demo)


def build_triples(cfg: DictConfig) -> TaskParts:
    """``data.source=webnlg``: pairs generated from the WebNLG 2020 training entries
    (:mod:`qe.content.aligner_triples`), ``lexes_per_entry`` reference texts per entry; ``val_fraction`` of the
    triple sets (grouped by entry MR) validate and choose the threshold on P(realised). The dev split is never read
    here. ``data.source=sample-triples``: the 30 WebNLG-style rows shipped in the package (:data:`SAMPLE_TRIPLES`,
    the zoo's triple test recipe) instead of the training entries."""
    from qe.content import Matcher
    from qe.content.aligner_data import Inventory
    from qe.content.aligner_triples import TripleInventory, kind_counts, make_triple_examples, rows_from_entries
    from qe.data.webnlg import webnlg_entries
    from qe.hf.data import TextClassificationDataModule

    d = cfg.data
    sample = str(d.source) == "sample-triples"
    rows = read_triple_rows() if sample else rows_from_entries(
        webnlg_entries("train", cfg.paths.data_dir), np.random.default_rng(int(cfg.seed)),
        int(d.get("lexes_per_entry", 1)))
    train_rows, val_rows = split_rows(rows, int(d.folds), int(d.fold_seed), [], float(d.val_fraction))
    matcher, inventory = Matcher(), TripleInventory.from_rows(train_rows)
    p_found = float(d.get("p_found", 0.5))
    prop = bool(d.get("prop_negatives", False))  # own streams: the other kinds' pairs are those generated without
    train = make_triple_examples(train_rows, matcher, inventory, np.random.default_rng(int(cfg.seed)), p_found=p_found,
                                 prop_rng=np.random.default_rng([int(cfg.seed), 1]) if prop else None)
    val_all = make_triple_examples(val_rows, matcher, inventory, np.random.default_rng(int(cfg.seed) + 1),
                                   p_found=p_found,
                                   prop_rng=np.random.default_rng([int(cfg.seed) + 1, 1]) if prop else None)
    rng = np.random.default_rng(int(cfg.seed) + 2)
    if d.get("max_train") and len(train) > int(d.max_train):
        train = [train[i] for i in sorted(rng.choice(len(train), int(d.max_train), replace=False))]
    val = val_all
    if d.get("max_val") and len(val) > int(d.max_val):
        val = [val[i] for i in sorted(rng.choice(len(val), int(d.max_val), replace=False))]
    tok = _tokenizer(cfg.model.encoder)
    dm = TextClassificationDataModule(tok, ([e.pair for e in train], [e.label for e in train]),
                                      {"val": ([e.pair for e in val], [e.label for e in val])},
                                      batch_size=int(d.batch_size), max_length=int(d.max_length),
                                      num_workers=int(d.get("num_workers", 0)), seed=int(cfg.seed))
    counts = kind_counts(train)
    dm.data_info = {"name": "webnlg-sample" if sample else "webnlg2020-train", "rows": len(rows),
                    "train_rows": len(train_rows), "val_rows": len(val_rows), "train_pairs": len(train), "val_pairs": len(val),
                    "calibration_pairs": len(val_all), "lexes_per_entry": int(d.get("lexes_per_entry", 1)),
                    "p_found": p_found, "prop_negatives": prop, **{f"pairs_{k}": v for k, v in counts.items()}}
    dm.aligner_info = {"inventory": Inventory({}), "matcher": matcher, "val_rows": val_rows, "triples": True,
                       "val_examples": val_all}
    log.info("content_aligner (webnlg triples): %d training rows -> %d pairs %s; %d validation rows -> %d pairs",
             len(train_rows), len(train), counts, len(val_rows), len(val_all))
    module = instantiate_model(cfg.model, num_labels=len(LABELS), val_names=["val"])
    return TaskParts(module=module, datamodule=dm, demo=_demo_triples)


def _print_demo(path, mr: str, text: str) -> None:
    """The export's verdicts on one MR and output (what ``qe train`` shows after writing it)."""
    from qe.content.scorer import CoverageScorer

    for v in CoverageScorer(aligner=str(path)).details([text], mrs=[mr])[0]["verdicts"]:
        print(f"{v['engine']:8s} {v['slot']}={v.get('value')}: {v['status']}"
              + (f" (p {v['confidence']:.2f})" if "confidence" in v else ""))


def _demo_triples(path, cfg) -> None:
    _print_demo(path, '[["Alan_Bean", "nationality", "United_States"], ["Alan_Bean", "birthPlace", "Wheeler,_Texas"]]',
                "Alan Bean, an American, was born in Wheeler, Texas.")


def _demo(path, cfg) -> None:
    _print_demo(path, "name[The Eagle], priceRange[cheap], familyFriendly[yes], customer rating[5 out of 5]",
                "The Eagle is not pricey, welcomes kids and its guests love it.")


__all__ = ["ContentAlignerModule", "build_content_aligner", "build_triples", "calibrate", "read_rows", "split_rows",
           "THRESHOLDS"]
