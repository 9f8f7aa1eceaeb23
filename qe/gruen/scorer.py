"""The GRUEN scorer: Y_S = clip(y_g + y_r + y_f + y_c, 0, 1) (Zhu & Bhat 2020, Section 3).

Components of an output with sentences s_1..s_n (after :func:`qe.gruen.preprocess.preprocess`):

* **y_g, grammaticality** = max(0, g_scale * (1/n) sum_i [lm_weight * l_i + acc_weight * a_i] + g_offset)
  - l_i from the masked LM (``likelihood="masked"``, the paper): with m_i = PLL_i / k_i, the mean masked
    log-probability per word piece, ``lm_transform="geo_prob"`` gives l_i = exp(lm_alpha * m_i) in (0, 1]
    (the geometric-mean token probability, raised to lm_alpha); ``"exp_ppl"`` gives exp(-lm_alpha * PPL_i).
  - ``likelihood="unmasked"`` (the reference code) uses the unmasked "perplexity" of :mod:`qe.gruen.pll` with
    ``exp_ppl`` and lm_alpha = 0.5, i.e. exp(-0.5 * PPL_i) per sentence (the code averages PPL over the
    sentences first and then applies exp; here the paper's per-sentence sum (l_i + g_i) / n is kept).
  - a_i = P(acceptable) from the CoLA classifier (``acceptability_value="prob"``), or the raw logit of the
    acceptable class (``"logit"``, the reference code).
  - Defaults (paper mode): lm_weight = acc_weight = 1, g_scale = 0.5, g_offset = 0, so y_g in [0, 1] is the
    mean of the two probabilities. ``preset="reference"`` sets the authors' code: unmasked, exp(-0.5 PPL),
    logits, g_scale = 1/8, g_offset = 0.5 (y_g >= 0, about [0, 1] for logits in [-4, 4]).
* **y_r, non-redundancy** in (-inf, 0]: -0.1 per feature hit over all sentence pairs (:mod:`.redundancy`).
* **y_f, focus** in {-0.1, 0} (``aggregate="any"``; per pair: (-inf, 0]) (:mod:`.focus`).
* **y_c, structure and coherence** = -coherence_weight * SOP loss in (-inf, 0] (:mod:`.coherence`); the paper
  adds -SOP loss with weight 1 but says all hyper-parameters were learned; with a weight of 1 a typical SOP
  loss (about 0.1-0.7) outweighs every other module, so the default weight is 0.1 (tunable).
  Without an SOP model (the authors' released code has none) y_c = 0 and the signature says ``c:none``.
* **Y_S** = clip(sum of the selected modules, 0, 1); ``modules`` selects the ablations of the paper's
  Figure 1: ``G``, ``GU``, ``GRU``, ``GRUEN`` (default).

**Empty outputs** — no sentence left after preprocessing (empty or whitespace text, or only one-word
fragments): every component is 0 and Y_S = ``empty_score`` (default 0.0). The paper does not say; the
reference code scores such an output as if its perplexity and acceptability were 0, which gives 0.625.
Outputs with one sentence have y_r = y_f = y_c = 0.

Batching: memory per forward pass is bounded by ``max_tokens`` padded tokens (defaults: 4,096 on CPU and 65,536 on
GPU for PLL; 8,192 / 262,144 for acceptability); the ``batch_size`` argument of ``score`` is not used.
Unique sentences are scored once, models load lazily on first use, and results do not depend on the budget.

**Untrained heads** — a plain encoder given as ``acceptability``, ``mlm`` or ``sop`` (e.g. ``"minilm"``) would score
with a randomly initialised head; it is refused with a message saying so unless ``allow_untrained_head=True``.

Export loaders (the ``acceptability``, ``mlm``, ``sop`` and ``gruen`` kinds of :mod:`qe.gruen.format`) are at the
end of this module; this module imports neither Lightning, Hydra nor omegaconf.
"""
from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from qe.core.scorer import Scorer
from qe.core.jsonio import dumps
from qe.gruen import format as fmt
from qe.gruen.focus import FocusConfig
from qe.gruen.preprocess import preprocess
from qe.gruen.redundancy import RedundancyConfig, all_pair_stats, features_from_stats

log = logging.getLogger(__name__)

MODULE_SETS = ("G", "GU", "GRU", "GRUEN")


@dataclass
class GruenParams:
    """Every weight and threshold of the combination (all tunable; see conf/hparams_search/gruen_optuna.yaml)."""

    likelihood: str = "masked"           # masked (paper) | unmasked (reference code)
    lm_transform: str = "geo_prob"       # geo_prob: exp(alpha * mean logp) | exp_ppl: exp(-alpha * PPL)
    lm_alpha: float = 1.0
    acceptability_value: str = "prob"    # prob | logit
    lm_weight: float = 1.0
    acc_weight: float = 1.0
    g_scale: float = 0.5
    g_offset: float = 0.0
    redundancy_penalty: float = 0.1
    redundancy_a: float = 0.8
    redundancy_b: float = 0.8
    redundancy_c: float = 0.6
    redundancy_d: float = 0.8
    redundancy_min_words: int = 5
    focus_threshold: float = 0.05
    focus_penalty: float = 0.1
    focus_center: float = 3.3
    focus_aggregate: str = "any"
    coherence_weight: float = 0.1
    modules: str = "GRUEN"
    empty_score: float = 0.0

    @classmethod
    def preset(cls, name: str, **over) -> "GruenParams":
        if name == "paper":
            return replace(cls(), **over)
        if name == "reference":
            base = dict(likelihood="unmasked", lm_transform="exp_ppl", lm_alpha=0.5, acceptability_value="logit",
                        g_scale=1 / 8, g_offset=0.5)
            base.update(over)
            return replace(cls(), **base)
        raise ValueError(f"GRUEN preset {name!r}: use 'paper' or 'reference'")

    def validate(self) -> None:
        if self.likelihood not in ("masked", "unmasked"):
            raise ValueError(f"likelihood={self.likelihood!r}: use masked or unmasked")
        if self.lm_transform not in ("geo_prob", "exp_ppl"):
            raise ValueError(f"lm_transform={self.lm_transform!r}: use geo_prob or exp_ppl")
        if self.acceptability_value not in ("prob", "logit"):
            raise ValueError(f"acceptability_value={self.acceptability_value!r}: use prob or logit")
        if self.modules.upper() not in MODULE_SETS:
            raise ValueError(f"modules={self.modules!r}: use one of {MODULE_SETS}")
        if self.focus_aggregate not in ("any", "per_pair"):
            raise ValueError("focus_aggregate must be any or per_pair")


@dataclass
class GruenRaw:
    """Threshold-free per-output quantities; :func:`combine` turns them into components for any params."""

    n_sentences: list[int]
    lm_logp: list[list[float]] = field(default_factory=list)     # masked: mean log p per word piece
    lm_ce: list[list[float]] = field(default_factory=list)       # unmasked: mean CE over all positions
    acc_prob: list[list[float]] = field(default_factory=list)
    acc_logit: list[list[float]] = field(default_factory=list)
    red_stats: list[list[tuple]] = field(default_factory=list)
    focus_dist: list[list[float]] = field(default_factory=list)
    sop_loss: list[float] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "GruenRaw":
        d = dict(d)
        d["red_stats"] = [[tuple(s) for s in r] for r in d.get("red_stats", [])]
        return cls(**d)

    def subset(self, idx: list[int]) -> "GruenRaw":
        return GruenRaw(**{f.name: [getattr(self, f.name)[i] for i in idx] if getattr(self, f.name) else []
                           for f in fields(self)})


def combine(raw: GruenRaw, p: GruenParams) -> dict[str, list[float]]:
    """Components and final score of each output from raw quantities and parameters."""
    p.validate()
    mods = p.modules.upper()
    rcfg = RedundancyConfig(p.redundancy_a, p.redundancy_b, p.redundancy_c, p.redundancy_d,
                            p.redundancy_min_words, p.redundancy_penalty)
    out: dict[str, list[float]] = {k: [] for k in ("grammaticality", "likelihood", "acceptability", "redundancy",
                                                   "focus", "coherence", "sop_loss", "n_sentences", "gruen")}
    for i, n in enumerate(raw.n_sentences):
        if n == 0:
            for k in out:
                out[k].append(0.0)
            out["gruen"][-1] = float(p.empty_score)
            continue
        if p.likelihood == "masked":
            m = np.asarray(raw.lm_logp[i], dtype=float)
            ppl = np.exp(-m)
        else:
            ce = np.asarray(raw.lm_ce[i], dtype=float)
            m, ppl = -ce, np.exp(ce)
        lterm = np.exp(p.lm_alpha * m) if p.lm_transform == "geo_prob" else np.exp(-p.lm_alpha * ppl)
        aterm = np.asarray(raw.acc_prob[i] if p.acceptability_value == "prob" else raw.acc_logit[i], dtype=float)
        yg = max(0.0, p.g_scale * float(np.mean(p.lm_weight * lterm + p.acc_weight * aterm)) + p.g_offset)
        yr = -p.redundancy_penalty * sum(len(features_from_stats(st, rcfg)) for st in raw.red_stats[i]) \
            if "R" in mods else 0.0
        yf = 0.0
        if "U" in mods and raw.focus_dist[i]:
            sims = [1.0 if (d is None or math.isnan(d)) else 1.0 / (1.0 + math.exp(min(700.0, d - p.focus_center)))
                    for d in raw.focus_dist[i]]
            low = sum(1 for s in sims if s < p.focus_threshold)
            yf = -p.focus_penalty * (min(low, 1) if p.focus_aggregate == "any" else low)
        sop = float(raw.sop_loss[i]) if raw.sop_loss else 0.0
        yc = -p.coherence_weight * sop if "EN" in mods else 0.0
        out["grammaticality"].append(yg)
        out["likelihood"].append(float(np.mean(lterm)))
        out["acceptability"].append(float(np.mean(aterm)))
        out["redundancy"].append(yr)
        out["focus"].append(yf)
        out["coherence"].append(yc)
        out["sop_loss"].append(sop)
        out["n_sentences"].append(float(n))
        out["gruen"].append(min(1.0, max(0.0, yg + yr + yf + yc)))
    return out


def _from_json(values: list) -> np.ndarray:
    """An array cached by :class:`PartCache`: null (NaN) and "inf" / "-inf" read back as floats."""
    a = np.asarray(values)
    return a.astype(float) if a.dtype == object or a.dtype.kind == "U" else a


class PartCache:
    """Per-part results keyed by (part, model) and the exact list of inputs, stored as JSON in ``directory``."""

    def __init__(self, directory: str | Path | None):
        self.dir = Path(directory) if directory else None

    def get(self, part: str, items: list[str], compute):
        if self.dir is None:
            return compute()
        import hashlib
        import json

        h = hashlib.sha256(part.encode())
        for it in items:
            h.update(it.encode())
            h.update(b"\0")
        f = self.dir / f"{part.split('|')[0]}-{h.hexdigest()[:20]}.json"
        if f.is_file():
            return tuple(_from_json(x) for x in json.loads(f.read_text()))
        res = compute()
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = f.with_suffix(".tmp")
        tmp.write_text(dumps([np.asarray(x).tolist() for x in res]))  # strict JSON: NaN -> null, inf -> "inf"
        tmp.replace(f)
        return tuple(np.asarray(x) for x in res)


class GruenScorer(Scorer):
    name = "gruen"

    def __init__(self, acceptability: str | Path | None = None, mlm: str | Path | None = None,
                 sop: str | Path | None = None, preset: str = "paper", splitter: str = "pysbd",
                 spacy_model: str = "en_core_web_md", device: str | None = None, max_tokens: int | None = None,
                 precision: str = "fp32", verify: bool = True, allow_untrained_head: bool = False, **params: Any):
        known = {f.name for f in fields(GruenParams)}
        bad = sorted(set(params) - known)
        if bad:
            raise TypeError(f"unknown GRUEN option(s) {bad}; parameters are {sorted(known)}")
        self.params = GruenParams.preset(preset, **params)
        self.params.validate()
        acceptability = acceptability or fmt.default_export("cola_minilm")
        if acceptability is None:
            raise ValueError("GRUEN needs a CoLA acceptability classifier: pass acceptability=<export dir or HF CoLA "
                             "model>; train one with `python train.py experiment=cola_minilm` (offline) or "
                             "`python train.py task=cola` (bert-base-cased)")
        mlm = mlm or fmt.default_export("mlm_minilm") or "bert-base-cased"
        sop = sop if sop is not None else fmt.default_export("sop_minilm")
        self._kw = dict(device=device, max_tokens=max_tokens, precision=precision, verify=verify,
                        allow_untrained_head=allow_untrained_head)
        self.splitter = splitter
        self.spacy_model = spacy_model
        sop = None if sop in (None, "", "none") else sop
        self.models = {"acceptability": str(acceptability), "mlm": str(mlm), "sop": str(sop) if sop else None}
        # models load lazily: a tuning trial served from the cache never loads them
        self._ids = {}
        for part in (fmt.ACCEPTABILITY, fmt.MLM, fmt.SOP):
            spec = self.models[part]
            if spec is None:
                continue
            _, manifest = fmt.resolve_model(spec, expected_kind=part, verify=verify)
            self._ids[part] = fmt.model_id(spec, manifest)
        self._lm = self._acc = self._sop = self._focus = None

    @property
    def lm(self):
        if self._lm is None:
            from qe.gruen.pll import MaskedLM

            self._lm = MaskedLM(self.models["mlm"], **self._kw)
        return self._lm

    @property
    def acc(self):
        if self._acc is None:
            from qe.gruen.acceptability import AcceptabilityModel

            self._acc = AcceptabilityModel(self.models["acceptability"], **self._kw)
        return self._acc

    @property
    def sop(self):
        if self._sop is None and self.models["sop"]:
            from qe.gruen.coherence import CoherenceModel

            self._sop = CoherenceModel(self.models["sop"], **self._kw)
        return self._sop

    @property
    def focus(self):
        if self._focus is None:
            from qe.gruen.focus import FocusModel

            self._focus = FocusModel(FocusConfig(spacy_model=self.spacy_model))
        return self._focus

    signature_libraries = ("torch", "transformers")

    def signature_fields(self) -> dict:
        p = self.params
        return {"modules": p.modules, "mlm": self._ids["mlm"],
                "lik": f"{p.likelihood}/{p.lm_transform}@{p.lm_alpha:g}", "cola": self._ids["acceptability"],
                "acc": p.acceptability_value, "g": f"{p.lm_weight:g},{p.acc_weight:g},{p.g_scale:g},{p.g_offset:g}",
                "r": float(p.redundancy_penalty),
                "u": f"{self.spacy_model}:c{p.focus_center:g}:t{p.focus_threshold:g}:p{p.focus_penalty:g}:"
                     f"{p.focus_aggregate}",
                "sop": f"{self._ids['sop']}*{p.coherence_weight:g}" if self.models["sop"] else "none",
                "split": self.splitter, "empty": float(p.empty_score)}

    # ---------------------------------------------------------------------------------------------------
    def raw(self, outputs: list[str], progress: bool = True, cache: "PartCache | None" = None) -> GruenRaw:
        """Threshold-free quantities for each output (the expensive part: the models run here).

        ``cache`` (used by ``task=gruen_tune``, :func:`qe.gruen.task.run`) stores each part under a key naming its model, so a sweep or a
        second report recomputes nothing.
        """
        cache = cache or PartCache(None)
        docs = [preprocess(o, self.splitter) for o in outputs]
        n = [len(d) for d in docs]
        empty = sum(1 for x in n if x == 0)
        if empty:
            log.warning("GRUEN: %d output(s) have no sentence of two or more words; they score empty_score=%g",
                        empty, self.params.empty_score)
        flat = [s for d in docs for s in d]
        uniq = list(dict.fromkeys(flat))
        pos = {s: i for i, s in enumerate(uniq)}
        lik = self.params.likelihood
        if lik == "masked":
            s, k = cache.get(f"pll|{self._ids['mlm']}", uniq, lambda: self.lm.pll(uniq, progress=progress))
        else:
            s, k = cache.get(f"unmasked|{self._ids['mlm']}", uniq, lambda: self.lm.unmasked_ce(uniq, progress=progress))
        per = np.asarray(s) / np.maximum(np.asarray(k), 1)
        prob, logit = cache.get(f"cola|{self._ids['acceptability']}", uniq, lambda: self.acc.scores(uniq, progress=progress))
        raw = GruenRaw(n_sentences=n)
        for d in docs:
            ix = [pos[x] for x in d]
            vals = [float(per[j]) for j in ix]
            raw.lm_logp.append(vals if lik == "masked" else [])
            raw.lm_ce.append(vals if lik != "masked" else [])
            raw.acc_prob.append([float(prob[j]) for j in ix])
            raw.acc_logit.append([float(logit[j]) for j in ix])
        mods = self.params.modules.upper()
        raw.red_stats = [all_pair_stats(d) if "R" in mods else [] for d in docs]
        if "U" in mods:
            pairs = [(d[i], d[i + 1]) for d in docs for i in range(len(d) - 1)]

            def focus_distances():
                self.focus._bags([x for pr in pairs for x in pr])
                return ([self.focus.distance(a, b) for a, b in pairs],)

            (dist,) = cache.get(f"focus|{self.spacy_model}|lemma-stop", [a + "\t" + b for a, b in pairs],
                                focus_distances)
            it = iter(np.asarray(dist, dtype=float).tolist())
            raw.focus_dist = [[next(it) for _ in range(len(d) - 1)] for d in docs]
        else:
            raw.focus_dist = [[] for _ in docs]
        if "EN" in mods and self.models["sop"]:
            multi = [i for i, d in enumerate(docs) if len(d) > 1]
            keys = ["\n".join(docs[i]) for i in multi]
            (losses,) = cache.get(f"sop|{self._ids['sop']}", keys,
                                  lambda: (self.sop.sop_loss([docs[i] for i in multi], progress=progress),))
            raw.sop_loss = [0.0] * len(docs)
            for i, v in zip(multi, losses):
                raw.sop_loss[i] = float(v)
        else:
            raw.sop_loss = [0.0] * len(docs)
        return raw

    def _score_components(self, outputs, *, mrs=None, refs=None, batch_size=None, progress=True, **kw):
        if not outputs:
            return {}
        return combine(self.raw(outputs, progress=progress), self.params)

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kw):
        return self._score_components(outputs, progress=progress)["gruen"]


class AcceptabilityScorer(Scorer):
    """P(acceptable) of each output taken as one text (GRUEN splits into sentences; this does not)."""

    name = "acceptability"

    def __init__(self, model: str | Path, **kw: Any):
        from qe.gruen.acceptability import AcceptabilityModel

        self.m = AcceptabilityModel(model, **kw)

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kw):
        empty = [not o.strip() for o in outputs]
        p, _ = self.m.scores([o if o.strip() else "." for o in outputs], progress=progress)
        return [float("nan") if e else float(x) for x, e in zip(p, empty)]

    signature_libraries = ("torch", "transformers")

    def signature_fields(self) -> dict:
        return self.m.signature_fields()


class PLLScorer(Scorer):
    """Mean masked log-probability per word piece of each output (NaN for an empty output)."""

    name = "pll"

    def __init__(self, model: str | Path, **kw: Any):
        from qe.gruen.pll import MaskedLM

        self.lm = MaskedLM(model, **kw)

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kw):
        s, k = self.lm.pll(outputs, progress=progress)
        return [float(a / b) if b else math.nan for a, b in zip(s, k)]

    signature_libraries = ("torch", "transformers")

    def signature_fields(self) -> dict:
        return self.lm.signature_fields()


class CoherenceScorer(Scorer):
    """y_c = -(mean SOP loss) over the output's splits (0 for fewer than two sentences)."""

    name = "sop"

    def __init__(self, model: str | Path, splitter: str = "pysbd", **kw: Any):
        from qe.gruen.coherence import CoherenceModel

        self.m = CoherenceModel(model, **kw)
        self.splitter = splitter

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kw):
        docs = [preprocess(o, self.splitter) for o in outputs]
        return [-x for x in self.m.sop_loss(docs, progress=progress)]

    signature_libraries = ("torch", "transformers")

    def signature_fields(self) -> dict:
        return {"score": "-SOP loss", **self.m.signature_fields(), "split": self.splitter}


# ------------------------------------------------------------------------------------- export loaders (registry)
def acceptability_from_export(export_dir: Path, manifest: dict, **options: Any) -> AcceptabilityScorer:
    """An ``acceptability`` export loads as P(acceptable) of each output."""
    return AcceptabilityScorer(export_dir, **options)


def mlm_from_export(export_dir: Path, manifest: dict, **options: Any) -> PLLScorer:
    """An ``mlm`` export loads as a PLL scorer (mean masked log-probability per word piece)."""
    return PLLScorer(export_dir, **options)


def sop_from_export(export_dir: Path, manifest: dict, **options: Any) -> CoherenceScorer:
    """A ``sop`` export loads as a coherence scorer (-SOP loss over the output's splits)."""
    return CoherenceScorer(export_dir, **options)


def gruen_from_export(export_dir: Path, manifest: dict, **options: Any) -> GruenScorer:
    """A ``gruen`` export names its component models and holds tuned parameters (written by task=gruen_tune)."""
    return GruenScorer(**{**fmt.gruen_options(export_dir, manifest), **options})
