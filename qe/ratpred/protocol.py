"""The evaluation protocol: which records train, select (dev) and test each fold - cross-validation (the paper's
Table 3), the in-set C1-C3 splits (Table 4), leave-one-domain-out, or transfer (train on everything) - and the
target-domain records whose references feed synthetic data (``protocol.target_data``)."""
from __future__ import annotations

from omegaconf import DictConfig

from qe.core.config import to_dict
from qe.data.datasets import load_dataset
from qe.ratpred.data import cv_fold, in_set_split, limit_refs_per_mr, make_parts



def splits(cfg: DictConfig, records) -> list[tuple[int, list, list, list]]:
    """``[(fold, train, dev, test), ...]`` of ``protocol.mode`` (cv, C1, C2, C3, lodo, transfer) over ``records``."""
    proto = cfg.protocol
    mode = proto.get("mode", "cv")
    if mode == "cv":
        parts = make_parts(records, int(proto.n_parts), int(proto.part_seed), str(proto.get("group_by", "mr_output")))
        folds = list(proto.folds) if proto.get("folds") is not None else list(range(int(proto.n_parts)))
        return [(f, *cv_fold(parts, f, int(proto.n_train_parts), int(proto.n_dev_parts))) for f in folds]
    if mode in ("C1", "C2", "C3"):
        sp = in_set_split(records, to_dict(proto.in_set), int(proto.n_small), int(proto.n_small_dev),
                          int(proto.part_seed), str(proto.get("group_by", "mr_output")))
        train = {"C1": sp["small_train"], "C2": sp["out_train"], "C3": sp["out_train"] + sp["small_train"]}[mode]
        dev = sp["out_dev"] if mode == "C2" else sp["small_dev"]
        return [(0, train, dev, sp["in_test"])]
    group_by = str(proto.get("group_by", "mr_output"))
    if mode == "lodo":
        key = str(proto.get("domain_key") or "dataset")
        have = sorted({str(getattr(r, key)) for r in records})
        domains = [str(x) for x in proto.get("domains") or have]
        missing = [x for x in domains if x not in have]
        if missing:
            raise ValueError(f"protocol.domains: {missing} not among the records' {key} values {have}")
        if len(have) < 2:
            raise ValueError(f"protocol.mode=lodo needs records of two or more {key} values (found {have})")
        out = []
        for dom in domains:  # fold index = the domain's place among all domains: protocol.domains=[X] reruns fold X
            i = have.index(dom)
            rest = [r for r in records if str(getattr(r, key)) != dom]
            parts = make_parts(rest, 5, int(proto.part_seed), group_by)
            out.append((i, [r for p in parts[:4] for r in p], parts[4],
                        [r for r in records if str(getattr(r, key)) == dom]))
        return out
    if mode == "transfer":
        parts = make_parts(records, 5, int(proto.part_seed), group_by)
        return [(0, [r for p in parts[:4] for r in p], parts[4], [])]
    raise ValueError(f"protocol.mode={mode!r}: use cv, C1, C2, C3, lodo or transfer")


def fold_labels(cfg: DictConfig, records) -> dict[int, str]:
    """Fold index -> the held-out domain for ``lodo`` (empty for the other modes)."""
    proto = cfg.protocol
    if proto.get("mode", "cv") == "lodo":
        key = str(proto.get("domain_key") or "dataset")
        have = sorted({str(getattr(r, key)) for r in records})
        return {have.index(str(x)): str(x) for x in proto.get("domains") or have}
    return {}


def target_records(cfg: DictConfig) -> list:
    """``protocol.target_data``: records of the target domain whose MRs and references (never outputs or ratings)
    feed the ``target_refs`` synthetic source, e.g. ``{name: e2e, version: cleaned, split: dev}`` or ``{name: webnlg,
    split: train}``; ``protocol.target_refs_per_mr``: the first k references of each target MR only;
    ``protocol.target_max_records``: the first N target records only (tiny runs and quick looks; null: all)."""
    spec = cfg.protocol.get("target_data")
    if not spec:
        return []
    spec = to_dict(spec)
    name = spec.pop("name")
    recs = load_dataset(name, data_dir=cfg.paths.data_dir, **spec)
    if not any(r.refs for r in recs):
        raise ValueError(f"protocol.target_data={name}: its records carry no references (field 'refs')")
    cap = cfg.protocol.get("target_max_records")
    if cap is not None:
        recs = recs[: int(cap)]
    return limit_refs_per_mr(recs, cfg.protocol.get("target_refs_per_mr"))


