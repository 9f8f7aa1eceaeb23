"""Registered names of the reference-based metrics and the papers' presets (imported via BUILTIN_MODULES).

Every name accepts the metric's options as keyword arguments, e.g. ``qe.load("bleu-4", smooth_method="none")``,
``qe.load("rouge-l", mode="mean")``. The table in :data:`PRESETS` (name -> (class, fixed options, what it is))
is also what ``qe.refmetrics.describe()`` prints.
"""
from __future__ import annotations

from typing import Any, Callable

from qe.refmetrics.ngram import BLEU, CHRF, NIST, TER
from qe.refmetrics.overlap import LR, METEOR, CIDErD, StringEdit
from qe.refmetrics.rouge import RougeScore, RougeSU, RougeW
from qe.registry import register_scorer

PRESETS: dict[str, tuple[Callable[..., Any], dict[str, Any], str]] = {}


def _preset(names: tuple[str, ...], cls, doc: str, **fixed):
    def factory(**options):
        return cls(**{**fixed, **options})

    factory.__name__ = f"make_{names[0].replace('-', '_').replace('+', 'p')}"
    factory.__doc__ = doc
    register_scorer(*names)(factory)
    PRESETS[names[0]] = (cls, fixed, doc)
    return factory


for _n in range(1, 5):
    _preset((f"bleu-{_n}",) + (("bleu",) if _n == 4 else ()), BLEU,
            f"sentence BLEU-{_n} (sacrebleu, 13a, exp smoothing, effective order; native multi-reference)", n=_n)
_preset(("nist-5", "nist"), NIST, "NIST-5 (mteval-v13a definition; information weights from the set's references)", n=5)
for _n in range(1, 5):
    _preset((f"rouge-{_n}",), RougeScore, f"ROUGE-{_n} F (rouge-score; best reference)", variant=str(_n))
_preset(("rouge-l",), RougeScore, "ROUGE-L F (rouge-score; best reference)", variant="L")
_preset(("rouge-w", "rouge-w-1.2"), RougeW, "ROUGE-W-1.2 F (weighted LCS; best reference)", weight=1.2)
_preset(("rouge-su4",), RougeSU, "ROUGE-SU4 F (skip gap <= 4 words + unigrams; best reference)", max_gap=4)
_preset(("rouge-s4",), RougeSU, "ROUGE-S4 F (skip-bigrams only, gap <= 4; best reference)", max_gap=4, unigrams=False)
_preset(("meteor",), METEOR, "METEOR (nltk; exact + stem, + WordNet synonyms when installed)")
_preset(("cider-d", "cider"), CIDErD, "CIDEr-D (pycocoevalcap semantics; df over the scored set's references)")
_preset(("ter",), TER, "TER (sacrebleu; lower is better; native multi-reference)")
_preset(("chrf",), CHRF, "chrF (sacrebleu, beta 2)")
_preset(("chrf++",), CHRF, "chrF++ (sacrebleu, word order 2)", word_order=2)
_preset(("se", "string-edit"), StringEdit,
        "string-edit similarity (Reiter & Belz 2009: sub 2, ins/del 1, 1 - d/(|out|+|ref|), mean over references)",
        mode="native")

# ---- the papers' choices --------------------------------------------------------------------------------------
# Kann, Rothe & Filippova 2018 (section 4.3): tokenised, lower-cased; best reference / union of reference n-grams
_preset(("rouge-l-mult",), RougeScore, "Kann et al.: ROUGE-L F, tokenised + lower-cased, best of all references",
        variant="L", mode="max")
_preset(("rouge-l-single",), RougeScore, "Kann et al.: ROUGE-L F against the first reference only", variant="L",
        mode="first")
for _n in (2, 3):
    for _m in ("f", "r"):
        _preset((f"lr{_n}-{_m}-mult", f"lr{_n}-{_m}"), LR,
                f"Toutanova et al. / Kann et al.: {_n}-gram {'F' if _m == 'f' else 'recall'} vs the union of reference {_n}-gram sets",
                n=_n, measure=_m, mode="union")
# Reiter & Belz 2009 (section 3.3.1): ROUGE-1.5.5 with its jackknife over references, recall (DUC practice)
_preset(("rouge-2-rb",), RougeScore, "Reiter & Belz: ROUGE-2 recall, ROUGE-1.5.5 jackknife over references",
        variant="2", measure="r", mode="jackknife")
_preset(("rouge-su4-rb",), RougeSU, "Reiter & Belz: ROUGE-SU4 recall, ROUGE-1.5.5 jackknife over references",
        max_gap=4, measure="r", mode="jackknife")
_preset(("bleu-4-rb",), BLEU, "Reiter & Belz: BLEU-4 with all references jointly (mteval), no smoothing",
        n=4, smooth_method="none", mode="native")

# ROUGE-LM and the SVR combiner live in their own modules; importing them registers their names / export kind
import qe.refmetrics.combine  # noqa: E402,F401
import qe.refmetrics.svr  # noqa: E402,F401
