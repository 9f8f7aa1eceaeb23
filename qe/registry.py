"""One table: scorer name -> factory, and export kind -> loader, each as ``"module:attr"`` imported on first use.

:data:`SCORERS` maps every registered name (aliases included) to an :class:`Entry`: where the factory lives, the
options it is called with (a preset fixes some), and one line saying what it is. :data:`EXPORT_KINDS` maps the
``kind`` of an export's manifest to the loader ``loader(export_dir, manifest, **options) -> Scorer`` (it lives in
:mod:`qe.kinds`, one layer down, with :func:`load_export`, so that the zoo, which loads export directories to check
them, never imports this module; re-exported here).
Nothing is imported until a name is loaded, so ``qe list`` and ``import qe`` cost no torch, Lightning or Hydra,
and a family whose optional dependency is missing breaks only its own names.

Users add their own with :func:`register_scorer` / :func:`register_export_kind` (an object or a
``"module:attr"`` string); a name that is already taken is refused.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

# export kinds, their files and loaders live one layer down (qe.kinds: the zoo loads exports from there without
# importing this module); re-exported here, where users have always found them
from qe.kinds import (EXPORT_FILES, EXPORT_KINDS, check_export_files, export_kinds, load_export, register_export_kind,
                      register_into, required_files, resolve_target)


@dataclass(frozen=True)
class Entry:
    target: str | Callable[..., Any]  #: "module:attr" (imported lazily) or the factory itself
    options: dict[str, Any] = field(default_factory=dict)  #: fixed options of a preset (user options win)
    doc: str = ""

    @property
    def module(self) -> str | None:
        return self.target.split(":", 1)[0] if isinstance(self.target, str) else None

    def resolve(self) -> Callable[..., Any]:
        return resolve_target(self.target)

    def build(self, **options: Any) -> Any:
        from qe.core.scorer import check_options

        factory = self.resolve()
        merged = {**self.options, **options}
        check_options(factory, merged, getattr(factory, "name", None) or getattr(factory, "__name__", "scorer"))
        return factory(**merged)


def _E(target: str, doc: str, **options: Any) -> Entry:
    return Entry(target, options, doc)


_REF = "qe.refmetrics"
_DISC = "qe.discourse.scorer"

#: name -> Entry. Aliases are separate keys with the same Entry. Keep it sorted by family.
SCORERS: dict[str, Entry] = {}


def _add(names: tuple[str, ...] | str, entry: Entry) -> None:
    for n in (names,) if isinstance(names, str) else names:
        SCORERS[n.lower()] = entry


# ---- baselines -------------------------------------------------------------------------------------------------
_add("length", _E("qe.evaluation.baselines:LengthScorer", "output length in words (the confound every report shows)"))

# ---- content (which MR facts an output realises; no references) ------------------------------------------------
_add("coverage", _E("qe.content.scorer:CoverageScorer", "MR facts realised minus wrong / hallucinated / repeated ones, "
                                                        "normalised; rows carry per-slot verdicts; "
                                                        "lexicon=auto|none|e2e|sf|webnlg|FILE, "
                                                        "score=counts|soft|soft-partial"))
_add("mr-bertscore", _E("qe.refmetrics.mrbertscore:MRBERTScore", "BERTScore of the output against its MR written out "
                                                              "as text (no references); precision / recall / f1"))

# ---- reference-based metrics (qe.refmetrics) --------------------------------------------------------------------
for _n in range(1, 5):
    _add((f"bleu-{_n}",) + (("bleu",) if _n == 4 else ()),
         _E(f"{_REF}.ngram:BLEU", f"sentence BLEU-{_n} (sacrebleu, 13a, exp smoothing, effective order; native multi-reference)", n=_n))
_add(("nist-5", "nist"), _E(f"{_REF}.ngram:NIST", "NIST-5 (mteval-v13a definition; information weights from the set's references)", n=5))
for _n in range(1, 5):
    _add(f"rouge-{_n}", _E(f"{_REF}.rouge:RougeScore", f"ROUGE-{_n} F (rouge-score; best reference)", variant=str(_n)))
_add("rouge-l", _E(f"{_REF}.rouge:RougeScore", "ROUGE-L F (rouge-score; best reference)", variant="L"))
_add(("rouge-w", "rouge-w-1.2"), _E(f"{_REF}.rouge:RougeW", "ROUGE-W-1.2 F (weighted LCS; best reference)", weight=1.2))
_add("rouge-su4", _E(f"{_REF}.rouge:RougeSU", "ROUGE-SU4 F (skip gap <= 4 words + unigrams; best reference)", max_gap=4))
_add("rouge-s4", _E(f"{_REF}.rouge:RougeSU", "ROUGE-S4 F (skip-bigrams only, gap <= 4; best reference)", max_gap=4, unigrams=False))
_add("meteor", _E(f"{_REF}.overlap:METEOR", "METEOR (nltk; exact + stem, + WordNet synonyms when installed)"))
_add(("cider-d", "cider"), _E(f"{_REF}.overlap:CIDErD", "CIDEr-D (pycocoevalcap semantics; df over the scored set's references)"))
_add("ter", _E(f"{_REF}.ngram:TER", "TER (sacrebleu; lower is better; native multi-reference)"))
_add("chrf", _E(f"{_REF}.ngram:CHRF", "chrF (sacrebleu, beta 2)"))
_add("chrf++", _E(f"{_REF}.ngram:CHRF", "chrF++ (sacrebleu, word order 2)", word_order=2))
_add("bertscore", _E(f"{_REF}.bertscore:BERTScore", "BERTScore F1 (bert-score package; offline MiniLM layer 6 by default, model=HF name; "
                                                      "components precision/recall/f1; best reference)"))
_add(("se", "string-edit"), _E(f"{_REF}.overlap:StringEdit",
                               "string-edit similarity (Reiter & Belz 2009: sub 2, ins/del 1, 1 - d/(|out|+|ref|), mean over references)",
                               mode="native"))
# the papers' choices: Kann, Rothe & Filippova 2018 (section 4.3): tokenised, lower-cased
_add("rouge-l-mult", _E(f"{_REF}.rouge:RougeScore", "Kann et al.: ROUGE-L F, tokenised + lower-cased, best of all references",
                        variant="L", mode="max"))
_add("rouge-l-single", _E(f"{_REF}.rouge:RougeScore", "Kann et al.: ROUGE-L F against the first reference only",
                          variant="L", mode="first"))
for _n in (2, 3):
    for _m in ("f", "r"):
        _add((f"lr{_n}-{_m}-mult", f"lr{_n}-{_m}"),
             _E(f"{_REF}.overlap:LR", f"Toutanova et al. / Kann et al.: {_n}-gram {'F' if _m == 'f' else 'recall'} vs the "
                                      f"union of reference {_n}-gram sets", n=_n, measure=_m, mode="union"))
# Reiter & Belz 2009 (section 3.3.1)
_add("rouge-2-rb", _E(f"{_REF}.rouge:RougeScore", "Reiter & Belz: ROUGE-2 recall, jackknife over references (pre-1.4 ROUGE, Lin 2004; ROUGE-1.5.5 dropped it)",
                      variant="2", measure="r", mode="jackknife"))
_add("rouge-su4-rb", _E(f"{_REF}.rouge:RougeSU", "Reiter & Belz: ROUGE-SU4 recall, jackknife over references (pre-1.4 ROUGE, Lin 2004; ROUGE-1.5.5 dropped it)",
                        max_gap=4, measure="r", mode="jackknife"))
_add("bleu-4-rb", _E(f"{_REF}.ngram:BLEU", "Reiter & Belz: BLEU-4 with all references jointly (mteval), no smoothing",
                     n=4, smooth_method="none", mode="native"))
_add("rouge-lm", _E(f"{_REF}.combine:RougeLM", "Kann et al.: z(ROUGE-L-mult) + z(WPSLOR of an LM export, lm=...)"))

# ---- discourse (Zhao, Strube & Eger 2023) -----------------------------------------------------------------------
_add(("ds-focus-nn", "ds-focus"), _E(f"{_DISC}:DSFocusScorer", "DS-Focus, noun foci", focus="nn"))
_add("ds-focus-entity", _E(f"{_DISC}:DSFocusScorer", "DS-Focus, entity foci", focus="entity"))
_add(("ds-focus-f-nn", "ds-focus*-nn"), _E(f"{_DISC}:DSFocusScorer", "DS-Focus*, noun foci (F averaging)", focus="nn", average="f"))
_add(("ds-focus-f-entity", "ds-focus*-entity"),
     _E(f"{_DISC}:DSFocusScorer", "DS-Focus*, entity foci (F averaging)", focus="entity", average="f"))
_add(("ds-sent-u-nn", "ds-sent-nn", "ds-sent"), _E(f"{_DISC}:DSSentScorer", "DS-Sent, unweighted, noun foci", focus="nn", weighted=False))
_add(("ds-sent-u-entity", "ds-sent-entity"),
     _E(f"{_DISC}:DSSentScorer", "DS-Sent, unweighted, entity foci", focus="entity", weighted=False))
_add("ds-sent-w-nn", _E(f"{_DISC}:DSSentScorer", "DS-Sent, weighted, noun foci", focus="nn", weighted=True))
_add("ds-sent-w-entity", _E(f"{_DISC}:DSSentScorer", "DS-Sent, weighted, entity foci", focus="entity", weighted=True))
_add("discoscore", _E(f"{_DISC}:DiscoScoreScorer", "DiscoScore: every DS variant as components"))
_add("rc", _E(f"{_DISC}:CohesionScorer", "RC: repetition-based cohesion (discourse baseline)", kind="rc"))
_add("lc", _E(f"{_DISC}:CohesionScorer", "LC: lexical cohesion (discourse baseline)", kind="lc"))
_add("entity-graph", _E(f"{_DISC}:GraphCoherenceScorer", "entity graph coherence (discourse baseline)", lexical=False))
_add("lexical-graph", _E(f"{_DISC}:GraphCoherenceScorer", "lexical graph coherence (discourse baseline)", lexical=True))
_add("lexical-chain", _E(f"{_DISC}:LexicalChainScorer", "lexical chain overlap (discourse baseline)"))

# ---- GRUEN (Zhu & Bhat 2020) ------------------------------------------------------------------------------------
_add("gruen", _E("qe.gruen.scorer:GruenScorer", "GRUEN: grammaticality, non-redundancy, focus, structure (components)"))

def register_scorer(name: str, *aliases: str, options: dict[str, Any] | None = None, doc: str = ""):
    """Decorator (or call with a ``"module:attr"`` string): add a user scorer under ``name`` and ``aliases``."""

    def deco(factory):
        entry = Entry(factory, dict(options or {}), doc or (getattr(factory, "__doc__", "") or "").strip().split("\n")[0])
        for n in (name, *aliases):
            key = n.lower()
            if key in SCORERS and SCORERS[key].target is not factory and SCORERS[key].target != factory:
                raise ValueError(f"scorer name {n!r} is already registered to {SCORERS[key].target!r}")
        for n in (name, *aliases):
            SCORERS[n.lower()] = entry
        return factory

    return deco


def available_scorers() -> list[str]:
    """Registered scorer names (aliases included), sorted."""
    return sorted(SCORERS)


def describe(prefix: str | None = None) -> str:
    """One line per registered name (``prefix`` keeps the entries whose module starts with it)."""
    rows = []
    for name, e in sorted(SCORERS.items()):
        if prefix and not (e.module or "").startswith(prefix):
            continue
        rows.append(f"{name:18s} {e.doc}")
    return "\n".join(rows)


def load(name_or_path: str | Path, **options: Any):
    """Return a scorer for an export directory, a registered scorer name, a named model of the zoo built into
    ``$QE_MODELS`` (:mod:`qe.zoo`; a zoo name that is not built raises :class:`qe.errors.ModelNotBuiltError`, a
    KeyError, with its build command), or a model
    archive (``qe zoo pack``): a local ``.qe.tar.gz`` file or a URL, ``file://``, ``http(s)://`` and any protocol of
    the user's fsspec back-ends (``s3://``, ``gs://``; ``hf://`` through huggingface_hub). An archive is downloaded
    into the zoo cache keyed by its sha256 and verified before use (:mod:`qe.zoo.archive`); ``sha256="<hex>"`` (or a
    ``#sha256=<hex>`` URL fragment) also pins the archive itself, and ``timeout=`` (seconds; default
    ``$QE_HTTP_TIMEOUT``, else 60) bounds how long a server may stay silent.

    An export's ``*.safetensors`` files are checked before its kind's loader runs
    (:func:`qe.core.export.check_weights`): a damaged one raises :class:`qe.errors.ExportError` naming the file.

    ``options`` are passed to the scorer (e.g. ``device="cpu"``, ``score="nce"`` for an LM export).
    """
    from qe.core.export import MANIFEST
    from qe.zoo.archive import fetch_export, is_archive

    if is_archive(name_or_path):
        sha256 = options.pop("sha256", None)
        timeout = options.pop("timeout", None)
        return load(fetch_export(str(name_or_path), sha256=sha256, timeout=timeout), **options)
    path = Path(str(name_or_path)).expanduser()
    if path.is_dir():
        return load_export(path, **options)
    key = str(name_or_path).lower()
    if key in SCORERS:
        return SCORERS[key].build(**options)
    if path.exists() and not path.is_dir():
        raise FileNotFoundError(f"{path} is a file; an export is a directory containing {MANIFEST}")
    # a named model of the zoo, built into $QE_MODELS (qe.zoo; recipes in qe/zoo/recipes/)
    from qe import zoo

    if "/" not in key and "\\" not in key and key:
        built = zoo.model_path(key)
        if (built / MANIFEST).is_file():
            return load(built, **options)
        if key in zoo.NAMES:
            from qe.errors import ModelNotBuiltError

            raise ModelNotBuiltError(zoo.not_built_message(key))
    raise KeyError(
        f"{name_or_path!r} is neither an export directory nor a registered scorer nor a named model of the zoo "
        f"(`qe list`). Registered scorers: {', '.join(available_scorers())}"
    )


def load_on_device(model: Any, device: str | None = None, /, **options: Any):
    """``qe.load(model, device=device, **options)``; a scorer that runs no model (length, BLEU, ROUGE: its
    constructor takes no ``device``) is loaded without it, since there is nothing to place on a device. A device
    given through ``options`` is passed as is."""
    if not device or "device" in options:
        return load(model, **options)
    try:
        return load(model, device=device, **options)
    except TypeError as exc:
        text = str(exc)
        if "device" not in text and "takes no arguments" not in text:
            raise
    return load(model, **options)


__all__ = ["Entry", "SCORERS", "EXPORT_KINDS", "EXPORT_FILES", "required_files", "check_export_files",
           "register_scorer", "register_export_kind", "register_into", "available_scorers", "export_kinds", "describe",
           "load", "load_export", "load_on_device", "resolve_target"]
