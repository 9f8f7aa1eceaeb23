"""Content errors per system: which MR facts each system's outputs omit, state wrongly, add or repeat (the "Content
errors" section of ``report.md`` and ``content_errors.csv``), from the :mod:`qe.content` matcher - the engine of the
``coverage`` scorer.

Per system, over its records that have an MR: outputs, checkable facts, the slot error rate pooled as the E2E papers
report it (omitted + wrong + hallucinated + repeated, summed over the outputs, over the sum of facts), each count, the
attributes most often omitted and most often hallucinated (counted per fact / value, ties by name), and the first
outputs in record order that omit something and that hallucinate something. Records without an MR are left out and
counted; an MR that does not parse is counted (the first record is named) and left out, never an error.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import pandas as pd

#: how much of an output / MR an example shows
EXAMPLE_CHARS = 160
#: the label of a hallucinated value that belongs to no attribute (a number in an RDF-triple output)
NO_SLOT = "(number)"
#: the label of a stretch of words no triple explains (``lexicon=webnlg``)
NO_SLOT_WORDS = "(words)"


def _label(h: dict) -> str:
    """The attribute a hallucinated value is counted under: its slot, else what kind of thing it is."""
    return h.get("slot") or (NO_SLOT_WORDS if h.get("kind") == "words" else NO_SLOT)


@dataclass
class ContentErrors:
    """What the section shows: ``table`` (one row per system), ``examples`` (system -> {"omitted": [...],
    "hallucinated": [...]}, each ``{"id", "output", "mr", "what"}``), the lexicon's name, and the records left out."""

    table: pd.DataFrame
    examples: dict[str, dict[str, list[dict[str, str]]]] = field(default_factory=dict)
    lexicon: str = "none"
    records: int = 0  #: records with an MR that parsed
    no_mr: int = 0
    bad_mr: int = 0
    first_bad: str | None = None  #: "record ID: why", the first MR that does not parse
    top: int = 3


def content_settings(content: Mapping[str, Any] | bool | None) -> dict[str, Any]:
    """``content`` of the config (``{enabled, lexicon}``; ``True`` / ``False`` for enabled alone) with defaults."""
    c = {"enabled": bool(content)} if isinstance(content, bool) else dict(content or {})
    unknown = sorted(set(c) - {"enabled", "lexicon"})
    if unknown:
        from qe.evaluation.scoring import EvaluationConfigError

        raise EvaluationConfigError(f"content.{unknown[0]}: unknown key (content has: enabled, lexicon)")
    return {"enabled": bool(c.get("enabled", True)), "lexicon": c.get("lexicon") or "none"}


def make_matcher(lexicon: Any = "none", data_dir: str | None = None):
    """The matcher of ``content.lexicon`` (none | e2e | a lexicon JSON file), as ``CoverageScorer(lexicon=...)``
    reads it; a bad value is a config error naming the key."""
    from qe.content import Matcher
    from qe.content.scorer import resolve_lexicon
    from qe.evaluation.scoring import EvaluationConfigError

    try:
        return Matcher(resolve_lexicon(None if lexicon is None else str(lexicon), data_dir))
    except (ValueError, OSError, KeyError) as exc:
        raise EvaluationConfigError(f"content.lexicon={lexicon}: {exc}") from None


def _clip(text: str, n: int = EXAMPLE_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def _top(counter: Counter, k: int) -> list[tuple[str, int]]:
    return sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


def content_errors(records: Sequence[Any], matcher, *, lexicon: str = "none", top: int = 3,
                   examples: int = 3) -> ContentErrors | None:
    """Align every record's output with its MR and sum the errors per system; ``None`` when no record has an MR."""
    no_mr = bad = 0
    first_bad = None
    per: dict[str, dict[str, Any]] = {}
    for r in records:
        mr = getattr(r, "mr", None)
        system = r.system if r.system is not None else "(none)"
        if mr is None or not str(mr).strip():
            no_mr += 1
            continue
        s = per.setdefault(system, {"outputs": 0, "facts": 0, "realised": 0, "omitted": 0, "wrong": 0,
                                    "hallucinated": 0, "repeated": 0, "unparsed_mrs": 0, "om": Counter(),
                                    "ha": Counter(), "ex_om": [], "ex_ha": []})
        try:
            al = matcher.align(str(mr), r.output or "", where=f"record {r.id!r}: field 'mr'")
        except ValueError as exc:  # qe.errors.RecordError: an MR in no format qe reads
            bad += 1
            s["unparsed_mrs"] += 1
            if first_bad is None:
                first_bad = str(exc).split(" - ")[0]  # names the record; the formats tried follow " - "
            continue
        c = al.counts()
        s["outputs"] += 1
        for k in ("facts", "realised", "omitted", "wrong", "hallucinated", "repeated"):
            s[k] += c[k]
        omitted = [v.slot for v in al.verdicts if v.status == "omitted"]
        halluc = [_label(h) for h in al.hallucinated]
        s["om"].update(omitted)
        s["ha"].update(halluc)
        ex = {"id": str(r.id), "output": _clip(r.output or ""), "mr": _clip(mr)}
        if omitted and len(s["ex_om"]) < examples:
            s["ex_om"].append({**ex, "what": ", ".join(dict.fromkeys(omitted))})
        if al.hallucinated and len(s["ex_ha"]) < examples:
            s["ex_ha"].append({**ex, "what": ", ".join(dict.fromkeys(
                f"{_label(h)}: {h.get('said') or h.get('value')}" for h in al.hallucinated))})
    if not per:
        return None
    rows, exs = [], {}
    for system in sorted(per):
        s = per[system]
        errors = s["omitted"] + s["wrong"] + s["hallucinated"] + s["repeated"]
        rows.append({"system": system, "outputs": s["outputs"], "facts": s["facts"], "errors": errors,
                     "ser": errors / s["facts"] if s["facts"] else float("nan"),
                     **{k: s[k] for k in ("realised", "omitted", "wrong", "hallucinated", "repeated", "unparsed_mrs")},
                     "top_omitted": "; ".join(f"{a} ({n})" for a, n in _top(s["om"], top)),
                     "top_hallucinated": "; ".join(f"{a} ({n})" for a, n in _top(s["ha"], top)),
                     "lexicon": lexicon})
        exs[system] = {"omitted": s["ex_om"], "hallucinated": s["ex_ha"]}
    return ContentErrors(pd.DataFrame(rows), exs, lexicon, sum(r["outputs"] for r in rows), no_mr, bad, first_bad,
                         top)


__all__ = ["ContentErrors", "content_errors", "content_settings", "make_matcher", "EXAMPLE_CHARS", "NO_SLOT"]
