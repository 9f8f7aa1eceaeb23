"""``task=gruen_tune``: score a rated dataset with GRUEN, report correlations, tune the combination on a dev split.

The rated outputs are split deterministically into **dev** and **test** by hashing (dataset, MR) — outputs for
the same input never straddle the split. Every weight and threshold of :class:`~qe.gruen.scorer.GruenParams`
can be set from ``gruen.params``; the value returned to a sweeper (``optimized_metric``, default
``dev/spearman``) is the Spearman correlation on the **dev** split only, averaged over datasets and the
ratings in ``gruen.tune_ratings``. Test-split correlations are computed only when ``gruen.report_test`` is true
(the Optuna config turns it off, so a sweep never sees them). Model outputs are cached per part
(:class:`~qe.gruen.scorer.PartCache`), so each trial only recombines numbers.

    python train.py task=gruen_tune                                      # defaults: the exports/*_minilm models
    python train.py -m task=gruen_tune hparams_search=gruen_optuna       # tune on dev
    python train.py task=gruen_tune +gruen.params.modules=GU              # ablation (Figure 1)
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)


def dev_test_split(records, dev_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    dev, test = [], []
    for i, r in enumerate(records):
        key = f"{seed}:{r.dataset}:{r.mr if r.mr is not None else r.output}"
        h = int(hashlib.md5(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        (dev if h < dev_fraction else test).append(i)
    return dev, test


def correlations(scores: list[float], records, idx: list[int], ratings: list[str]) -> dict[str, dict[str, float]]:
    from scipy.stats import pearsonr, spearmanr

    out: dict[str, dict[str, float]] = {}
    by_ds: dict[str, list[int]] = {}
    for i in idx:
        by_ds.setdefault(records[i].dataset or "all", []).append(i)
    for ds, ii in sorted(by_ds.items()):
        x = np.array([scores[i] for i in ii], dtype=float)
        for rt in ratings:
            y = np.array([records[i].ratings.get(rt, math.nan) for i in ii], dtype=float)
            ok = np.isfinite(x) & np.isfinite(y)
            if ok.sum() < 3 or np.std(x[ok]) == 0:
                rho = r = math.nan
            else:
                rho = float(spearmanr(x[ok], y[ok]).statistic)
                r = float(pearsonr(x[ok], y[ok]).statistic)
            out[f"{ds}/{rt}"] = {"spearman": rho, "pearson": r, "n": int(ok.sum())}
    return out


def run(cfg: DictConfig) -> dict[str, Any]:
    from qe.data.datasets import load_dataset
    from qe.gruen.scorer import GruenScorer, PartCache, combine

    g = cfg.gruen
    records = load_dataset(str(g.dataset), data_dir=cfg.paths.data_dir)
    if g.get("max_records"):
        records = records[: int(g.max_records)]
    params = OmegaConf.to_container(g.params, resolve=True) or {}
    models = {k: (str(v) if v not in (None, "", "none") else None)
              for k, v in OmegaConf.to_container(g.models, resolve=True).items()}
    scorer = GruenScorer(acceptability=models["acceptability"], mlm=models["mlm"], sop=models.get("sop"),
                         preset=str(g.preset), splitter=str(g.splitter), device=g.get("device"), **params)
    outputs = [r.output for r in records]
    raw = scorer.raw(outputs, progress=bool(g.get("progress", True)), cache=PartCache(g.get("cache_dir")))
    comps = combine(raw, scorer.params)
    dev, test = dev_test_split(records, float(g.dev_fraction), int(g.split_seed))
    ratings = list(g.ratings)
    res: dict[str, Any] = {"signature": scorer.signature, "n_dev": len(dev), "n_test": len(test),
                           "params": vars(scorer.params), "models": models}
    res["dev"] = correlations(comps["gruen"], records, dev, ratings)
    tune = [v["spearman"] for k, v in res["dev"].items() if k.split("/")[1] in set(g.tune_ratings)]
    tune = [x for x in tune if math.isfinite(x)]
    metrics: dict[str, Any] = {"dev/spearman": float(np.mean(tune)) if tune else -1.0}
    if g.get("report_test", True):
        res["test"] = correlations(comps["gruen"], records, test, ratings)
        res["all"] = correlations(comps["gruen"], records, list(range(len(records))), ratings)
        for split in ("test", "all"):
            for k, v in res[split].items():
                metrics[f"{split}/{k}/spearman"] = v["spearman"]
                metrics[f"{split}/{k}/pearson"] = v["pearson"]
    res["component_means"] = {k: float(np.mean(v)) for k, v in comps.items()}
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "gruen_report.json").write_text(json.dumps(res, indent=2, default=float))
    print(json.dumps({"signature": res["signature"], "dev/spearman": metrics["dev/spearman"],
                      **({"test": res["test"]} if "test" in res else {})}, indent=1, default=float))
    if cfg.get("export") and g.get("write_export", True):
        from qe.export import export_writer

        dest = Path(str(cfg.export_dir)).expanduser()
        with export_writer(dest, kind="gruen", config={"models": models, "params": vars(scorer.params),
                                                       "preset": str(g.preset), "splitter": str(g.splitter)},
                           data={"name": str(g.dataset), "dev": len(dev), "test": len(test)},
                           metrics={k: v for k, v in metrics.items() if isinstance(v, float)}) as tmp:
            (tmp / "README.txt").write_text("GRUEN parameters; component models are referenced, not copied.\n")
        metrics["export_path"] = str(dest)
    return metrics


PAPER_TABLE3 = {  # Zhu & Bhat 2020, Table 3: GRUEN (bert-base-cased PLL + CoLA, ALBERT SOP), all outputs
    "BAGEL/naturalness": (0.22, 0.32), "BAGEL/quality": (0.19, 0.26),
    "SFHOT/naturalness": (0.44, 0.48), "SFHOT/quality": (0.44, 0.51),
    "SFRES/naturalness": (0.24, 0.25), "SFRES/quality": (0.27, 0.27),
}


def markdown(reports: dict[str, str], split: str = "all") -> str:
    """A table of Spearman / Pearson per dataset and rating for several reports (label -> gruen_report.json)."""
    loaded = {k: json.loads(Path(v).read_text()) for k, v in reports.items()}
    head = "| dataset / rating | paper ρ / r | " + " | ".join(f"{k} ρ / r" for k in loaded) + " |"
    lines = [head, "|" + "---|" * (2 + len(loaded))]
    for key, (pr, pp) in PAPER_TABLE3.items():
        cells = []
        for rep in loaded.values():
            v = rep.get(split, {}).get(key)
            cells.append("—" if v is None else f"{v['spearman']:.2f} / {v['pearson']:.2f} (n={v['n']})")
        lines.append(f"| {key} | {pr:.2f} / {pp:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    args = sys.argv[1:]
    split = "all"
    if args and args[0].startswith("--split="):
        split, args = args[0].split("=", 1)[1], args[1:]
    print(markdown(dict(a.split("=", 1) for a in args), split))
