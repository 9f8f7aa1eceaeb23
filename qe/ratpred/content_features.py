"""Content features for RatPred (``model.content_features=true``; not in the paper): what the content matcher
(:class:`qe.content.Matcher`) finds in an output, as a small vector beside the encoders' states at the input of the
tanh layers.

For one (MR, output) pair, with ``F`` = every fact of the MR (realised + omitted + wrong + unchecked)::

    [realised / F, omitted / F, wrong / F, unchecked / F, hallucinated, repeated + stand-ins..., log(1 + F)]

precisely :data:`FEATURE_NAMES`: the four verdict fractions (all 0 when the MR has no fact), the counts of hallucinated
and repeated values (plus the *stand-ins*, below, in the hallucinated count), and the number of facts on a log scale.
:func:`content_vector` computes it; training (:class:`ContentFeatures`, fed to the loaders by
:func:`qe.ratpred.data.make_loader`) and scoring (:class:`qe.ratpred.scorer.RatPredScorer`) both call it, so the two
paths give the same vector for the same pair.

**Lexical text, and the stand-ins.** The matcher reads the *lexical* MR and output - it finds values by their
surface forms, so it must see them, not ``X-<slot>`` placeholders. Every training instance is lexical: rated outputs
and references are stored as written, and synthetic errors (:mod:`qe.ratpred.synth`) are injected into the
*delexicalised* tokens and then relexicalised (:func:`qe.ratpred.mr.relexicalise`: the k-th ``X-<slot>`` becomes
the MR's k-th value of the slot), so a duplicated value is there as words and the matcher sees it (``repeated``).
One thing relexicalisation cannot undo: a placeholder the synthetic dictionary inserted for a slot *this* MR does not
hold (``insert_rand`` / ``replace`` draw ``X-near`` from another output) has no value to become and stays the literal
token ``X-near``. It stands for "a value of a slot the MR does not have" - a hallucination - which the matcher cannot
recognise as such. So :func:`stand_ins` removes such tokens (only placeholders the delexicaliser can write:
``X-<slot>`` for a slot of :data:`qe.ratpred.mr.DELEX_SLOTS`, ``X-e<n>`` for a triple entity) before the output is
aligned and counts each as one hallucinated value. Real text never holds these tokens, so at scoring time the rule
is a no-op, and both paths stay one function.

The matcher's lexicon (``model.content_lexicon``: ``sf`` - mined from the SF Hotel / Restaurant training references -,
``e2e``, ``none`` for the rules alone, or a lexicon JSON file; :func:`qe.content.scorer.resolve_lexicon`) is mined
once per process and written into the export (:data:`LEXICON_FILE`), so the scorer needs no data directory and uses
the very lexicon the model was trained with (the manifest records its checksum). The ``sf`` lexicon reads references
only, never ratings - the S6 synthetic data already trains on every SF/BAGEL reference.

The matcher comes through the registry (``qe.registry.load("coverage", lexicon=...)``: the ``coverage`` scorer's
own matcher and lexicon resolution), not by importing :mod:`qe.content`: one family does not import another.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch

from qe.ratpred.mr import DELEX_SLOTS

#: the vector's entries, in order (the manifest stores them: a model trained on another list is refused)
FEATURE_NAMES = ("realised", "omitted", "wrong", "unchecked", "hallucinated", "repeated", "log_facts")
CONTENT_DIM = len(FEATURE_NAMES)
#: what the auxiliary head (``model.content_head``) predicts: the first entries of the vector (log(1 + facts) is the
#: MR's alone, nothing to learn from the output)
HEAD_TARGETS = FEATURE_NAMES[:6]
#: the matcher's lexicon inside an export (absent when the model used the rules alone)
LEXICON_FILE = "content_lexicon.json"
#: a placeholder token the delexicaliser can write: X-<slot> (slot names as norm_slot writes them) or X-e<n>
_STAND_IN = re.compile(r"X-(e\d+|" + "|".join(sorted(DELEX_SLOTS, key=len, reverse=True)) + r")")


def stand_ins(output: str) -> tuple[str, int]:
    """``output`` without its stray placeholder tokens, and how many there were (module docstring)."""
    words = output.split()
    keep = [w for w in words if not _STAND_IN.fullmatch(w)]
    return (" ".join(keep) if len(keep) != len(words) else output), len(words) - len(keep)


def coverage_matcher(lexicon: Any = None, data_dir: str | None = None):
    """The content matcher (:class:`qe.content.Matcher`) of the ``coverage`` scorer for ``lexicon`` (a lexicon object,
    a lexicon name such as ``sf``, a lexicon JSON file, or None / ``none`` for the rules alone)."""
    from qe.registry import load

    opts = {"data_dir": data_dir} if data_dir is not None else {}
    return load("coverage", lexicon=lexicon, **opts).matcher


def _is_rules(name: Any) -> bool:
    return name is None or (isinstance(name, str) and name.lower() in ("none", "rules", ""))


def content_vector(matcher: Any, mr: str, output: str, where: str = "<mr>") -> np.ndarray:
    """The :data:`FEATURE_NAMES` vector (float32) of one lexical (MR, output) pair with a content matcher
    (:func:`coverage_matcher`): one function for training and scoring."""
    text, n_stand_ins = stand_ins(output)
    c = matcher.align(mr, text, where=where).counts()
    total = c["facts"] + c["unchecked"]
    frac = [c[k] / total if total else 0.0 for k in ("realised", "omitted", "wrong", "unchecked")]
    return np.asarray(frac + [c["hallucinated"] + n_stand_ins, c["repeated"], math.log1p(total)], dtype=np.float32)


class ContentFeatures:
    """The content vectors of (MR, output) pairs for one lexicon, cached per distinct pair (an instance shared by the
    two training stages, the dev part and the test part is aligned once per process).

    ``lexicon``: a :class:`qe.content.Lexicon` (None: the matcher's rules alone); ``name`` is what the
    configuration called it (``sf``, ``none``, a path); ``cache``: keep each pair's vector (training: the same pairs
    come back in every stage); a scorer computes each batch's vectors once and keeps nothing (bounded memory)."""

    _SHARED: dict[tuple, "ContentFeatures"] = {}

    def __init__(self, lexicon: Any = None, name: str = "none", cache: bool = True):
        self.lexicon, self.name, self.cache = lexicon, str(name), bool(cache)
        self.matcher = coverage_matcher(lexicon)
        self._cache: dict[tuple[str, str], torch.Tensor] = {}

    @classmethod
    def shared(cls, name: str | None, data_dir: str | None = None) -> "ContentFeatures":
        """One instance per (lexicon name, data directory) and process: mining ``sf`` takes about 30 s."""
        key = (str(name), None if data_dir is None else str(data_dir))
        if key not in cls._SHARED:
            lexicon = None if _is_rules(name) else coverage_matcher(str(name), data_dir).lexicon
            cls._SHARED[key] = cls(lexicon, "none" if name is None else str(name))
        return cls._SHARED[key]

    def __call__(self, mrs: list[str], outputs: list[str], where: list[str] | None = None) -> list[torch.Tensor]:
        """One float32 tensor of :data:`CONTENT_DIM` entries per pair (the cached tensor itself: do not modify it)."""
        out = []
        for i, (mr, o) in enumerate(zip(mrs, outputs)):
            key = (mr, o)
            v = self._cache.get(key)
            if v is None:
                v = torch.from_numpy(content_vector(self.matcher, mr, o, where=where[i] if where else f"mrs[{i}]"))
                if self.cache:
                    self._cache[key] = v
            out.append(v)
        return out

    def manifest(self) -> dict[str, Any]:
        """What an export stores under ``config.content_features``."""
        lex = self.matcher.lexicon
        return {"features": list(FEATURE_NAMES), "lexicon": self.name,
                "lexicon_sha": None if self.lexicon is None else lex.checksum,
                "lexicon_file": None if self.lexicon is None else LEXICON_FILE}

    def save(self, export_dir: str | Path) -> None:
        if self.lexicon is not None:
            self.lexicon.save(Path(export_dir) / LEXICON_FILE)

    @classmethod
    def from_export(cls, export_dir: str | Path, entry: dict[str, Any]) -> "ContentFeatures":
        """The features an export was trained with (its ``config.content_features`` entry and lexicon file); a
        ValueError when the export asks for features this version does not compute."""
        if list(entry.get("features") or []) != list(FEATURE_NAMES):
            raise ValueError(f"{export_dir}: the model was trained on content features {entry.get('features')}, this "
                             f"version computes {list(FEATURE_NAMES)}")
        lexicon = None
        if entry.get("lexicon_file"):
            lexicon = coverage_matcher(str(Path(export_dir) / entry["lexicon_file"])).lexicon
            if entry.get("lexicon_sha") and lexicon.checksum != entry["lexicon_sha"]:
                raise ValueError(f"{export_dir}: {entry['lexicon_file']} is not the lexicon the model was trained "
                                 "with (checksum differs)")
        return cls(lexicon, str(entry.get("lexicon", "none")), cache=False)


__all__ = ["CONTENT_DIM", "FEATURE_NAMES", "HEAD_TARGETS", "LEXICON_FILE", "ContentFeatures", "content_vector",
           "coverage_matcher", "stand_ins"]
