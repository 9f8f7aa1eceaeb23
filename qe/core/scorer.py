"""The scorer contract every metric in qe follows (see ``../shared/DESIGN.md``).

``score(outputs, mrs=None, refs=None, batch_size=None, progress=True) -> list[float]``

* ``outputs`` is a sequence of strings. A non-string item raises ``TypeError`` naming its index.
  Empty or whitespace-only strings get the score the scorer documents (for LM scores: NaN).
* ``mrs`` is a sequence of strings aligned with ``outputs``; ``refs`` is a sequence aligned with
  ``outputs`` whose items are a string (one reference) or a sequence of strings (several).
* Scores come back in input order, one float per output.
"""
from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from typing import Any

from qe.core.inputs import check_texts, normalise_refs  # noqa: F401  (re-exported)
from qe.core.signature import Signature, library_versions
from qe.errors import MissingInputError


class Scorer(abc.ABC):
    """Base class. Subclasses implement :meth:`_score` (and optionally :meth:`_score_components`)."""

    #: short scorer name used in reports
    name: str = "scorer"
    requires_mrs: bool = False
    requires_refs: bool = False
    requires_sources: bool = False
    #: True when a larger score means a better output
    higher_is_better: bool = True
    #: the same for the scorer's own corpus-level score where it differs (the ``coverage`` scorer's corpus score is
    #: the pooled slot error rate: lower is better); None: as ``higher_is_better``
    corpus_higher_is_better: bool | None = None
    #: the short name of the corpus-level score where it is not the scorer's own metric computed over the corpus
    #: (``"SER"`` for the coverage scorer's pooled slot error rate); None: the scorer's :attr:`name` (corpus BLEU-4)
    corpus_name: str | None = None
    #: its long name (``"slot error rate"``); None: ``corpus-level <corpus name>``. ``qe score --system-level`` /
    #: ``-b`` / ``qe compare`` name every system figure with these and its direction
    corpus_long_name: str | None = None
    #: True when an output's score depends on the other outputs scored with it (CIDEr-D's document frequencies,
    #: NIST's information weights): the CLI then scores the whole input in one call instead of in chunks
    corpus_dependent: bool = False
    #: True when ``score(..., ids=[record ids])`` is accepted, so errors about one input name its record
    accepts_ids: bool = False
    #: the key of :meth:`score_components` whose values :meth:`score` returns (None: the component named like the
    #: scorer, else the first); ``qe score --components`` writes it as the record's ``score``
    main_component: str | None = None
    #: the libraries whose versions change the numbers (import names), named in the signature after ``qe``
    signature_libraries: tuple[str, ...] = ()

    def score(
        self,
        outputs: Sequence[str],
        mrs: Sequence[str] | None = None,
        refs: Sequence[Any] | None = None,
        batch_size: int | None = None,
        progress: bool = True,
        **kwargs: Any,
    ) -> list[float]:
        outputs = check_texts(outputs, "outputs")
        mrs, refs = self._check_inputs(outputs, mrs, refs, kwargs)
        if not outputs:
            return []
        scores = self._score(outputs, mrs=mrs, refs=refs, batch_size=batch_size, progress=progress, **kwargs)
        scores = [float(s) for s in scores]
        if len(scores) != len(outputs):  # a bug in a subclass, never the user's fault
            raise RuntimeError(f"{self.name}: produced {len(scores)} scores for {len(outputs)} outputs")
        return scores

    def score_components(
        self,
        outputs: Sequence[str],
        mrs: Sequence[str] | None = None,
        refs: Sequence[Any] | None = None,
        batch_size: int | None = None,
        progress: bool = True,
        **kwargs: Any,
    ) -> dict[str, list[float]]:
        """Per-component scores; single-component scorers return ``{name: scores}``."""
        outputs = check_texts(outputs, "outputs")
        mrs, refs = self._check_inputs(outputs, mrs, refs, kwargs)
        return self._score_components(outputs, mrs=mrs, refs=refs, batch_size=batch_size, progress=progress, **kwargs)

    def _score_components(self, outputs, **kw) -> dict[str, list[float]]:
        return {self.name: self.score(outputs, **kw)}

    @abc.abstractmethod
    def _score(self, outputs: list[str], *, mrs, refs, batch_size, progress, **kwargs) -> list[float]:
        ...

    def signature_fields(self) -> dict[str, Any]:
        """The options that change this scorer's numbers, in the order its signature names them (``None`` values are
        left out). Subclasses declare theirs here; :attr:`signature` formats them."""
        return {}

    @property
    def signature(self) -> Signature:
        """What produced the numbers (:class:`~qe.core.signature.Signature`, a ``str``): the scorer's name, its
        :meth:`signature_fields` and the versions of ``qe`` and :attr:`signature_libraries`."""
        return Signature(self.name, self.signature_fields(), library_versions(self.signature_libraries))

    def signature_for(self, made_by: str) -> Signature:
        """The signature this scorer would give the outputs that ``made_by`` (the signature an earlier run of the same
        configuration recorded) was given for: :attr:`signature`, unless what the signature names was picked by the
        inputs, which a scorer that has scored nothing cannot say (``coverage --opt lexicon=auto`` names the
        lexicons the MRs picked: it answers with their checksums now). ``qe evaluate``'s resume reuses finished scores
        only where the two are the same."""
        return self.signature

    def identity(self) -> str:
        """What must be the same for ``qe score --resume`` to keep rows scored earlier, known before scoring:
        :attr:`signature`, unless the signature names what the inputs pick (coverage's ``lexicon=auto``: it names
        every lexicon it may pick, with its checksum)."""
        return str(self.signature)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.signature}>"

    def _check_inputs(self, outputs, mrs, refs, kwargs):
        n = len(outputs)
        if mrs is not None:
            mrs = check_texts(mrs, "mrs")
            if len(mrs) != n:
                raise ValueError(f"mrs: got {len(mrs)} entries for {n} outputs")
        elif self.requires_mrs:
            raise MissingInputError(f"{self.name} needs meaning representations: pass mrs=[...] aligned with outputs")
        if refs is not None:
            refs = normalise_refs(refs, n)
        elif self.requires_refs:
            raise MissingInputError(f"{self.name} needs references: pass refs=[...] aligned with outputs")
        if self.requires_sources and kwargs.get("sources") is None:
            raise MissingInputError(f"{self.name} needs source documents: pass sources=[...] aligned with outputs")
        return mrs, refs


def nan() -> float:
    return math.nan


def check_options(factory: Any, options: dict[str, Any], name: str) -> None:
    """Refuse options that ``factory`` (a scorer class or function) does not take, naming each with the closest
    valid one and listing them all: a typo (``--opt lexcon=none``) used to surface as ``CoverageScorer.__init__()
    got an unexpected keyword argument 'lexcon'``. A factory that takes ``**kwargs`` passes them on to something
    else, so it is left to say what it does not know. Raises TypeError, as Python does for a bad keyword."""
    import difflib
    import inspect

    try:
        params = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):  # a builtin or a callable without a signature: nothing to check against
        return
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return
    valid = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [k for k in options if k not in valid]
    if not unknown:
        return
    said = []
    for k in unknown:
        close = difflib.get_close_matches(k, valid, n=1, cutoff=0.6)
        said.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise TypeError(f"{name}: unknown option{'s' if len(unknown) > 1 else ''} {', '.join(said)}; "
                    + (f"its options: {', '.join(valid)}" if valid else "it takes no options"))
