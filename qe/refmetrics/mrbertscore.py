"""``mr-bertscore``: BERTScore of an output against its own MR written out as text -- no references.

    import qe
    s = qe.load("mr-bertscore")                      # offline MiniLM, last layer, F1 (as ``bertscore``)
    s.score(outputs, mrs=mrs)                        # F1 per output
    s.score_components(outputs, mrs=mrs)             # precision / recall / f1

    qe score -m mr-bertscore --mrs mrs.txt -i outputs.txt

Every MR format ``qe`` reads (:mod:`qe.core.mr`) is written out by :func:`mr_text`, one clause per act or RDF
triple, and that text is the single "reference" the :class:`~qe.refmetrics.bertscore.BERTScore` scorer (the
``bert-score`` package, every option of ``bertscore`` accepted: ``model``, ``layer``, ``idf``, ...) compares the
output with. Precision then asks how much of the output the data supports (what it adds: hallucinated content, but
also every function word the MR does not spell), recall how much of the data the output says (what it leaves out).
This is the referenceless "BERTScore against the source" baseline of summarisation and data-to-text evaluation,
here without any training and without the matcher's lexicons: a soft, embedding-level counterpart of ``coverage``.
``idf=True`` computes the weights over the MR texts of the scored set.

How an MR is written (:func:`mr_text`):

* an RDF triple ``Alan_Bean | birthPlace | Wheeler,_Texas`` -> ``Alan Bean birth place Wheeler, Texas.``
  (underscores as spaces, double quotes dropped, the property split into lower-case words; case kept);
* an act's slots ``name[The Eagle], priceRange[cheap], familyFriendly[yes]`` -> ``name The Eagle, price range
  cheap, family friendly yes.`` (slot names split into words; a slot without value is its name alone);
  acts other than ``inform`` start with the act's name (``request area.``), an act without slots is its name.

Empty outputs score 0 (``bertscore``'s rule); an MR with nothing to write out (``inform()``, ``{}``, no triples)
scores NaN, as ``coverage`` scores an MR with nothing to check; an MR that cannot be parsed is an error naming the
record (``mrs[i]`` or the record id) and the formats tried.
"""
from __future__ import annotations

from typing import Any

from qe.core.mr import E2E_ACT, TRIPLE_ACT, parse_acts
from qe.core.scorer import Scorer
from qe.core.surface import property_words


def _entity(value: str) -> str:
    """An RDF subject / object as written text, case kept: underscores as spaces, double quotes dropped."""
    return " ".join(value.replace("_", " ").replace('"', " ").split())


def _value(value: str) -> str:
    v = " ".join(value.split())
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        v = v[1:-1].strip()
    return v


def mr_text(mr: str, mr_format: str = "auto", where: str = "<mr>") -> str:
    """The MR written out as plain text, one clause per act or RDF triple (module docstring)."""
    clauses = []
    for act, slots in parse_acts(mr, mr_format, where=where):
        if act == TRIPLE_ACT:
            d = dict(slots)
            clauses.append(f"{_entity(d['subject'] or '')} {property_words(d['property'] or '')} "
                           f"{_entity(d['object'] or '')}")
            continue
        parts = [property_words(s) + (f" {_value(v)}" if v is not None and _value(v) else "") for s, v in slots]
        head = "" if act == E2E_ACT else property_words(act.lstrip("?"))
        body = ", ".join(p for p in parts if p.strip())
        clauses.append(" ".join(x for x in (head, body) if x))
    return " ".join(" ".join(c.split()).rstrip(".") + "." for c in clauses if c.strip())


class MRBERTScore(Scorer):
    """BERTScore of each output against :func:`mr_text` of its MR (components precision / recall / f1)."""

    name = "MR-BERTScore"
    requires_mrs = True
    accepts_ids = True
    main_component = "f1"
    signature_libraries = ("bert_score", "transformers")

    def __init__(self, mr_format: str = "auto", **bertscore_options: Any):
        from qe.core.mr import MR_FORMATS
        from qe.refmetrics.bertscore import BERTScore

        if mr_format not in MR_FORMATS:
            raise ValueError(f"mr-bertscore: mr_format={mr_format!r}: choose one of {', '.join(MR_FORMATS)}")
        if "missing_refs" in bertscore_options or "mode" in bertscore_options:
            raise ValueError("mr-bertscore: every output has exactly one MR text as its reference; missing_refs / mode "
                             "do not apply")
        self.mr_format = mr_format
        # an MR with nothing to write out (``inform()``, ``{}``) has no reference text: NaN, as coverage scores it
        self.bertscore = BERTScore(missing_refs="nan", **bertscore_options)
        self.corpus_dependent = self.bertscore.corpus_dependent

    def signature_fields(self) -> dict:
        f = dict(self.bertscore.signature_fields())
        f.pop("refs", None)
        return {**f, "mr": self.mr_format}

    def texts(self, mrs, ids=None) -> list[str]:
        """:func:`mr_text` of every MR; an unreadable one is an error naming its record."""
        return [mr_text(mr, self.mr_format, where=f"mrs[{i}]" if ids is None else f"record {ids[i]!r}: field 'mr'")
                for i, mr in enumerate(mrs)]

    def _score_components(self, outputs, *, mrs=None, refs=None, batch_size=None, progress=True, ids=None,
                          **kw) -> dict[str, list[float]]:
        if mrs is None:  # called directly: the base class's check says what is missing
            self._check_inputs(list(outputs), mrs, None, {})
        texts = self.texts(list(mrs), ids)
        return self.bertscore.score_components(list(outputs), refs=[[t] for t in texts], batch_size=batch_size,
                                               progress=progress)

    def _score(self, outputs, *, mrs, refs, batch_size, progress, ids=None, **kw) -> list[float]:
        return self._score_components(outputs, mrs=mrs, batch_size=batch_size, progress=progress, ids=ids)["f1"]


__all__ = ["MRBERTScore", "mr_text"]
