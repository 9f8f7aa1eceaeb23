"""The learned aligner: a cross-encoder that reads what the lexicon misses ("not pricey", "kid friendly"), behind the
matcher's interface.

A ``content_aligner`` export (``qe train task=content_aligner``, :mod:`qe.content.task`) is an HF encoder (the
offline all-MiniLM-L6-v2 by default) with a 3-way head over pairs ``query [SEP] output``: the query is a fact
(``customer rating : 5 out of 5``) or a slot alone (``price range``: does the output talk about it?), the output
its matching tokens (:func:`qe.content.aligner_data.output_text`); the labels are ``realised`` / ``omitted`` /
``wrong``. A fact is ``realised`` when P(realised) reaches the threshold, else ``wrong`` or ``omitted``, whichever is
more likely. The value a ``wrong`` fact is given instead is the slot's value (among those seen in training) the
aligner finds most likely realised.

:class:`AlignedMatcher` puts it behind :class:`~qe.content.align.Matcher`'s interface (``align(mr, output)`` ->
:class:`~qe.content.align.Alignment`), in three modes (:data:`MODES`):

* ``combined`` (the default): the matcher's verdicts stay where it found something - ``realised`` (the value or one
  of its known wordings) and ``wrong`` (the slot's words with another value); the facts it found nothing about
  (``omitted``) are decided by the aligner;
* ``override``: the aligner decides the matcher's ``wrong`` facts too (when both say ``wrong``, the value the
  matcher read is kept);
* ``aligner``: the aligner decides every fact, and the additions are its own alone (on RDF triples, where it is
  asked about none, the matcher's hallucinated numbers and unexplained words stay).

With ``additions``, the slots the MR does not hold (and, combined, the matcher found nothing about) are asked about
too: a slot the output talks about is added with the value the aligner finds most likely. The threshold and whether
to ask about additions are chosen per mode when the export is written, on held-out training rows (the manifest's
``config.thresholds`` and ``config.additions``); ``threshold=`` / ``additions=`` override them.

Each verdict names its engine (``matcher`` / ``aligner``; aligner verdicts carry their probability as
``confidence``, and all three as ``probs``, which the ``coverage_soft`` figure reads). Facts without value (``request(area)``) and unchecked values keep the matcher's verdicts.

RDF triples: an export trained on WebNLG (``data.source=webnlg``, :mod:`qe.content.aligner_triples`; its
``config.facts`` is ``triples``) is asked about triples, by the query ``subject | property | object`` (its
``config.query_triples``), in the same modes. The matcher never says ``wrong`` about a triple (it checks objects,
not properties), so ``override`` on triples asks about the triples the matcher calls realised instead: one stays
realised unless ``wrong`` is the aligner's most likely label for it (no threshold: wrong property or object, the
error the combined engine cannot see), and the ones it calls omitted are decided as combined. No additions are
asked about and a ``wrong`` triple gets no other value. It leaves attribute-value MRs
to the matcher, and an export trained on attribute-value MRs leaves triples to the matcher.

    import qe
    scorer = qe.load("coverage", lexicon="e2e", aligner="exports/content_aligner")
    scorer.details(["The Eagle is not pricey."], mrs=["name[The Eagle], priceRange[cheap]"])
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qe.core.config import as_flag
from qe.content.align import Alignment, Matcher, Verdict
from qe.content.aligner_data import (LABELS, OMITTED, REALISED, WRONG, Inventory, checkable, output_text, query,
                                     verdict_query)
from qe.content.lexicon import norm_value
from qe.core.mr import TRIPLE_ACT
from qe.core.surface import norm_slot

KIND = "content_aligner"
HF_SUBDIR = "hf"
CONFIG_FILE = "aligner.json"
MODES = ("combined", "override", "aligner")


# ----------------------------------------------------------------------------------------------------- export
def save_export(dest: str | Path, model, tokenizer, *, config: dict[str, Any], data: dict[str, Any],
                metrics: dict[str, Any]) -> Path:
    """Write a ``content_aligner`` export: ``hf/`` (``save_pretrained``: weights and tokenizer), ``aligner.json``
    (labels, threshold, input lengths, the slot inventory) and a short model card. ``config`` is
    :class:`Aligner`'s configuration plus, under ``train``, the training config."""
    from qe.core.export import CARD, export_writer
    from qe.core.jsonio import dumps

    model = model.float().cpu().eval()
    own = {k: v for k, v in config.items() if k != "train"}
    # the coverage score the export is loaded as lies in [0, 1] (qe.ensemble's scales=auto reads it)
    with export_writer(dest, kind=KIND, config=config, data=data, metrics=metrics, card=False,
                       extra={"score_range": [0.0, 1.0]}) as tmp:
        model.save_pretrained(tmp / HF_SUBDIR, safe_serialization=True)
        tokenizer.save_pretrained(tmp / HF_SUBDIR)
        (tmp / CONFIG_FILE).write_text(dumps(own, indent=1) + "\n", encoding="utf-8")
        (tmp / CARD).write_text(_card(own, data, metrics), encoding="utf-8")
    return Path(dest).resolve()


def _card(config: dict, data: dict, metrics: dict) -> str:
    figs = "\n".join(f"| {k} | {v:.4g} |" for k, v in sorted(metrics.items())
                     if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))
    slots = ", ".join(f"`{d['name']}`" for d in config.get("inventory", {}).get("slots", {}).values())
    return "\n".join([
        "# Learned content aligner (coverage scorer)", "",
        "A cross-encoder deciding, for a fact of an MR and an output, whether the output realises it, omits it or",
        "states its slot with another value (qe.content.aligner). Used by the `coverage` scorer:", "",
        "```python", "import qe", 'scorer = qe.load("coverage", lexicon="e2e", aligner="path/to/this/export")',
        "scorer.details(outputs, mrs=mrs)", "```", "",
        "```bash", "qe score -m coverage --opt lexicon=e2e --opt aligner=path/to/this/export -i out.txt --mrs mrs.txt",
        "```", "",
        f"Thresholds on P(realised) per mode: {config.get('thresholds')}; asks about additions: "
        f"{config.get('additions')} ({config.get('threshold_from', '')}).", "",
        f"Slots seen in training: {slots or '-'}. Other slots are asked about by their name's words, out of what it "
        "was trained on.", "",
        "## Training data", "", f"`{data.get('name', '?')}`: " + ", ".join(
            f"{k} {v}" for k, v in data.items() if k != "name"), "",
        "## Validation figures", "", "| metric | value |", "|---|---|", figs or "| - | - |", "",
        "## Limits", "",
        ("- Trained on RDF triples (WebNLG training entries), asked as `subject | property | object`; "
         "attribute-value MRs keep the matcher's verdicts." if config.get("facts") == "triples" else
         "- Trained on attribute-value MRs of one domain; RDF triples and facts without value keep the matcher's "
         "verdicts."),
        "- Its negatives are synthetic (deleted spans, swapped values, facts the text does not hold) plus the "
        "training rows' real errors; see docs/results/content.md for how it compares with the matcher.", ""])


def read_export(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """(the export folder, its aligner configuration); :class:`qe.errors.ExportError` for anything that is not a
    ``content_aligner`` export."""
    import json

    from qe.core.export import read_manifest, verify_checksum
    from qe.errors import ExportError

    p = Path(str(path)).expanduser()
    manifest = read_manifest(p, expected_kind=KIND)
    verify_checksum(p, manifest)
    try:
        config = json.loads((p / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ExportError(f"{p}: cannot read {CONFIG_FILE} ({exc})") from None
    config["manifest"] = manifest
    return p, config


# ----------------------------------------------------------------------------------------------------- model
class Aligner:
    """The cross-encoder with its decision rule. ``probs(pairs)`` -> (n, 3) probabilities in :data:`LABELS` order,
    cached per pair (a scorer asks about the same fact again when it scores the same output again)."""

    def __init__(self, model, tokenizer, config: dict[str, Any], *, device: str | None = None,
                 batch_size: int = 64, threshold: float | None = None, name: str = "aligner"):
        import torch

        self.model, self.tokenizer, self.config = model, tokenizer, config
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model.to(self.device).eval()
        self.batch_size = int(batch_size)
        self.max_length = int(config.get("max_length", 64))
        self.thresholds = {m: float(t) for m, t in (config.get("thresholds") or {}).items()}
        self.additions = {m: bool(a) for m, a in (config.get("additions") or {}).items()}
        self.threshold = None if threshold is None else float(threshold)  #: overrides every mode's
        for t in [self.threshold, *self.thresholds.values()]:
            if t is not None and not 0.0 <= t <= 1.0:
                raise ValueError(f"aligner threshold {t!r} must be in [0, 1]")
        self.inventory = Inventory.from_dict(config.get("inventory", {}))
        #: trained on RDF triples (asked about triples only) rather than attribute-value facts
        self.on_triples = config.get("facts", "slots") == "triples"
        self.name = name
        self._cache: dict[tuple[str, str], np.ndarray] = {}

    @classmethod
    def load(cls, path: str | Path, **kw: Any) -> "Aligner":
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        p, config = read_export(path)
        model = AutoModelForSequenceClassification.from_pretrained(str(p / HF_SUBDIR))
        tok = AutoTokenizer.from_pretrained(str(p / HF_SUBDIR))
        checksum = str(config["manifest"].get("checksum", ""))[:12]
        return cls(model, tok, config, name=f"{p.name}@{checksum}", **kw)

    def probs(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        import torch

        todo = list(dict.fromkeys(p for p in pairs if p not in self._cache))
        # similar lengths together: less padding
        todo.sort(key=lambda p: len(p[0]) + len(p[1]))
        for i in range(0, len(todo), self.batch_size):
            chunk = todo[i:i + self.batch_size]
            enc = self.tokenizer([a for a, _ in chunk], [b for _, b in chunk], truncation="longest_first",
                                 max_length=self.max_length, padding=True, return_tensors="pt").to(self.device)
            with torch.inference_mode():
                logits = self.model(**enc).logits.float()
            for p, row in zip(chunk, torch.softmax(logits, -1).cpu().numpy()):
                self._cache[p] = row
        if not pairs:
            return np.zeros((0, len(LABELS)))
        return np.stack([self._cache[p] for p in pairs])

    def threshold_for(self, mode: str) -> float:
        """The threshold on P(realised) of ``mode``: the one given, else the export's for the mode, else 0.5."""
        return self.threshold if self.threshold is not None else self.thresholds.get(mode, 0.5)

    @staticmethod
    def status(p: np.ndarray, threshold: float) -> str:
        if p[REALISED] >= threshold:
            return "realised"
        return "wrong" if p[WRONG] > p[OMITTED] else "omitted"


# ----------------------------------------------------------------------------------------------------- engine
class AlignedMatcher:
    """The matcher and the aligner together, with :class:`~qe.content.align.Matcher`'s interface (module
    docstring). ``align_many`` batches the aligner's questions over many outputs. ``threshold`` / ``additions``:
    None takes the export's choice for ``mode``."""

    def __init__(self, matcher: Matcher, aligner: Aligner, mode: str = "combined", additions: bool | None = None,
                 threshold: float | None = None):
        if mode not in MODES:
            raise ValueError(f"aligner mode {mode!r}: choose {', '.join(MODES)}")
        self.matcher, self.aligner, self.mode = matcher, aligner, mode
        self.additions = aligner.additions.get(mode, True) if additions is None else \
            as_flag(additions, "aligner_additions")
        self.threshold = aligner.threshold_for(mode) if threshold is None else float(threshold)
        self.name = "aligner" if mode == "aligner" else f"matcher+aligner{'' if mode == 'combined' else '-' + mode}"
        self.lexicon = matcher.lexicon

    facts = staticmethod(Matcher.facts)

    def align(self, mr: str, output: str, where: str = "<mr>") -> Alignment:
        return self.align_many([mr], [output], [where])[0]

    def align_many(self, mrs: Sequence[str], outputs: Sequence[str], wheres: Sequence[str] | None = None,
                   matched: Sequence[Alignment] | None = None) -> list[Alignment]:
        """``matched``: the matcher's alignments of the same pairs, when the caller has them already."""
        wheres = list(wheres) if wheres is not None else [f"mrs[{i}]" for i in range(len(mrs))]
        als = list(matched) if matched is not None else \
            [self.matcher.align(mr, o, where=w) for mr, o, w in zip(mrs, outputs, wheres)]
        texts = [output_text(o) for o in outputs]
        facts = [self.matcher.facts(mr, w, self.matcher.mr_format) for mr, w in zip(mrs, wheres)]
        handled = [self._handles(f) for f in facts]
        plans = [self._plan(al, f) if h else ([], []) for al, f, h in zip(als, facts, handled)]
        tri = self.aligner.on_triples
        self.aligner.probs([(q, texts[i]) for i, (asks, slots) in enumerate(plans) for q in
                            [self._q(v.slot, v.value, tri) for _, v in asks] + [query(s) for s in slots]])
        # second round: the values of the facts said wrong and of the slots added
        second = []
        for i, (asks, slots) in enumerate(plans):
            for _, v in asks:
                if tri:  # a wrong triple gets no other value: objects are entities, too many to ask about
                    continue
                if self._status(v.slot, v.value, texts[i]) == "wrong" and not (v.status == "wrong" and v.said_value):
                    second += [(query(v.slot, u), texts[i]) for u in self._others(v.slot, v.value)]
            for s in slots:
                if self._status(s, None, texts[i]) == "realised":
                    second += [(query(s, u), texts[i]) for u in self._others(s, None)]
        self.aligner.probs(second)
        own = [not self.aligner.on_triples and h for h in handled]
        return [self._decide(al, asks, slots, texts[i], own[i])
                for i, (al, (asks, slots)) in enumerate(zip(als, plans))]

    def _handles(self, facts) -> bool:
        """Whether the export decides an MR's facts (:meth:`Matcher.facts`): its format is the export's (an
        attribute-value export leaves any MR with a triple to the matcher; a triples export, any MR with a slot)."""
        some_triple = any(a == TRIPLE_ACT for a, _, _ in facts)
        triples = bool(facts) and all(a == TRIPLE_ACT for a, _, _ in facts)
        return bool(facts) and (triples if self.aligner.on_triples else not some_triple)

    # ---------------------------------------------------------------------------------------------- internals
    def _q(self, slot: str, value: str | None, triple: bool = False) -> str:
        return verdict_query(slot, value) if triple else query(slot, value)

    def _p(self, slot: str, value: str | None, text: str, triple: bool = False) -> np.ndarray:
        return self.aligner.probs([(self._q(slot, value, triple), text)])[0]

    def _status(self, slot: str, value: str | None, text: str, triple: bool = False) -> str:
        return self.aligner.status(self._p(slot, value, text, triple), self.threshold)

    def _others(self, slot: str, value: str | None) -> list[str]:
        if self.aligner.inventory.kind(slot) in (None, "entity"):
            return []  # names: too many to ask about; the verdict stays without the output's value
        nv = norm_value(value)
        return [u for u in self.aligner.inventory.values(slot) if norm_value(u) != nv]

    def _plan(self, al: Alignment, facts) -> tuple[list[tuple[int, Verdict]], list[str]]:
        """(the verdicts the aligner decides, the slots it is asked about for additions) for an MR it handles."""
        triples = bool(facts) and all(a == TRIPLE_ACT for a, _, _ in facts)
        decides = {"combined": ("omitted",), "override": ("omitted", "wrong"),
                   "aligner": ("omitted", "wrong", "realised")}[self.mode]
        if triples and self.mode == "override":  # the matcher's realised triples: only a wrong label overrules it
            decides = ("omitted", "realised")
        asks = [(k, v) for k, v in enumerate(al.verdicts) if checkable(v.value) and v.status in decides]
        slots: list[str] = []
        if self.additions and not triples:
            held = {norm_slot(s) for _, s, _ in facts}
            found = ({norm_slot(h["slot"]) for h in al.hallucinated if h.get("slot")}
                     if self.mode != "aligner" else set())
            slots = [d["name"] for key, d in self.aligner.inventory.slots.items()
                     if key not in held and key not in found and d.get("kind") != "entity"]
        return asks, slots

    def _best_value(self, slot: str, value: str | None, text: str) -> tuple[str | None, float]:
        others = self._others(slot, value)
        if not others:
            return None, math.nan
        ps = self.aligner.probs([(query(slot, u), text) for u in others])[:, REALISED]
        k = int(np.argmax(ps))
        return (others[k] if ps[k] >= self.threshold else None), float(ps[k])

    def _decide(self, al: Alignment, asks, slots, text: str, own_mr: bool = True) -> Alignment:
        # the additions are the aligner's own where it could be asked about them: an attribute-value MR that an
        # attribute-value export handles (on triples it is asked about none; an MR it leaves is the matcher's)
        own = self.mode == "aligner" and own_mr
        out = Alignment(list(al.verdicts), [] if own else list(al.hallucinated), [] if own else list(al.repeated))
        tri = self.aligner.on_triples
        for k, v in asks:
            p = self._p(v.slot, v.value, text, tri)
            status = self.aligner.status(p, self.threshold)
            if tri and self.mode == "override" and v.status == "realised":
                if int(np.argmax(p)) != WRONG:
                    continue  # the matcher's verdict stays
                status = "wrong"
            said = value = None  # the output's words; the value they state (wrong verdicts)
            if tri:
                said = v.said if status == "realised" else None
            elif status == "wrong" and v.status == "wrong" and v.said_value is not None:
                said, value = v.said, v.said_value  # both say wrong: what the matcher read stays
            elif status == "wrong":  # the aligner reads no words: only the value it finds likeliest
                value, _ = self._best_value(v.slot, v.value, text)
                if value is None and self.aligner.inventory.kind(v.slot) == "binary":
                    value = "no" if norm_value(v.value) in ("yes", "true") else "yes"
            conf = float(p[LABELS.index(status)])
            out.verdicts[k] = Verdict(v.slot, v.value, status, said, engine="aligner", confidence=round(conf, 4),
                                      said_value=value, probs={lab: float(p[j]) for j, lab in enumerate(LABELS)})
        for s in slots:
            if self._status(s, None, text) != "realised":
                continue
            said, conf = self._best_value(s, None, text)
            if said is not None:
                out.hallucinated.append({"slot": s, "value": said, "engine": "aligner", "confidence": round(conf, 4)})
        return out


__all__ = ["KIND", "MODES", "Aligner", "AlignedMatcher", "save_export", "read_export", "HF_SUBDIR", "CONFIG_FILE"]
