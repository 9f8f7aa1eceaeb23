"""What produced a set of numbers: a scorer's name, the options that change its scores, and the library versions.

As sacrebleu's ``Signature``, a :class:`Signature` is built from declared fields, never written by hand: a scorer
declares its options in :meth:`qe.core.scorer.Scorer.signature_fields` and the libraries that compute its numbers in
``signature_libraries``; the base class assembles them. The result is a ``str`` (printed by the CLI, written into
reports and model cards, compared and stored as any string)::

    BLEU-4|mode:max|tok:13a|lc:no|smooth:exp|eff:yes|sacrebleu:2.6.0|qe:0.1.0

that also keeps its parts: ``sig.name``, ``sig.fields`` (ordered), ``sig.versions`` and ``sig.as_dict()``.

Formatting rules (one place, so every signature reads the same): fields are ``key:value`` joined by ``|`` in the
declared order; ``True`` / ``False`` read ``yes`` / ``no``; floats are written with ``%g``; a field whose value is
``None`` is left out (an option that does not apply); a nested signature (an ensemble's members, ROUGE-LM's parts)
is written in brackets, ``key:[...]``. Versions come last, ``qe`` first among them.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

#: import name -> distribution name, where they differ (for the version lookup)
_DISTRIBUTIONS = {"bert_score": "bert-score", "rouge_score": "rouge-score", "sklearn": "scikit-learn"}


def format_value(value: Any) -> str:
    """One field value as the signature writes it (see the module docstring)."""
    if isinstance(value, Signature):
        return f"[{value}]"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@functools.lru_cache(maxsize=None)
def library_version(name: str) -> str:
    """The installed version of ``name`` (an import name such as ``torch`` or ``qe``); ``"?"`` when unknown."""
    if name == "qe":
        from qe.version import __version__

        return __version__
    import importlib
    import importlib.metadata

    try:  # the distribution's own record first: some modules' __version__ lags (bert_score 0.3.13 says 0.3.12)
        version = importlib.metadata.version(_DISTRIBUTIONS.get(name, name))
    except importlib.metadata.PackageNotFoundError:  # imported from a source tree
        try:
            version = getattr(importlib.import_module(name), "__version__", None) or "?"
        except ImportError:
            version = "?"
    return str(version)


def library_versions(names: Iterable[str]) -> dict[str, str]:
    """``{name: version}`` for ``qe`` and then each of ``names`` (duplicates once, in order)."""
    return {n: library_version(n) for n in dict.fromkeys(["qe", *names])}


class Signature(str):
    """A scorer's signature: a string built from ``name``, ordered ``fields`` and library ``versions``."""

    name: str
    fields: dict[str, Any]
    versions: dict[str, str]

    def __new__(cls, name: str, fields: Mapping[str, Any] | None = None,
                versions: Mapping[str, str] | None = None) -> "Signature":
        kept = {str(k): v for k, v in (fields or {}).items() if v is not None}
        vers = dict(versions or {})
        parts = [str(name), *(f"{k}:{format_value(v)}" for k, v in kept.items()),
                 *(f"{k}:{v}" for k, v in vers.items())]
        obj = super().__new__(cls, "|".join(parts))
        obj.name, obj.fields, obj.versions = str(name), kept, vers
        return obj

    def as_dict(self) -> dict[str, Any]:
        """``{"name", "fields", "versions", "text"}`` (nested signatures as dicts too), for JSON reports."""
        return {"name": self.name,
                "fields": {k: v.as_dict() if isinstance(v, Signature) else v for k, v in self.fields.items()},
                "versions": dict(self.versions), "text": str(self)}

    @classmethod
    def of(cls, sig: Any) -> "Signature":
        """``sig`` as a Signature: a scorer that overrides ``signature`` with a plain string keeps it as the name."""
        return sig if isinstance(sig, Signature) else cls(str(sig))

    def with_fields(self, **fields: Any) -> "Signature":
        """This signature with more fields after its own (``qe compare``'s resampling settings, a component's name),
        versions still last."""
        return Signature(self.name, {**self.fields, **fields}, self.versions)

    def __reduce__(self):  # pickling / copying keep the parts (multiprocessing hands scorers' signatures around)
        return (Signature, (self.name, self.fields, self.versions))


__all__ = ["Signature", "format_value", "library_version", "library_versions"]
