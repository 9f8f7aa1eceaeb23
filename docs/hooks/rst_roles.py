"""Griffe extension for the API reference (mkdocs.yml: mkdocstrings ... extensions).

The package's docstrings are prose with Sphinx roles (:func:`qe.load`, :class:`Scorer`, :mod:`qe.zoo.archive`)
and reST literal-block markers (a line ending in ``::``). Markdown has neither, so before mkdocstrings renders a
docstring each role becomes a plain code span (`qe.load`) and ``text::`` becomes ``text:`` (the indented block after
it is a code block in Markdown too).
"""
from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|obj|exc|const|ref|term):`~?([^`]+)`")
_LITERAL = re.compile(r"(?m)(\S)::$")
_LITERAL_ALONE = re.compile(r"(?m)\s+::$")


class RstRoles(griffe.Extension):
    """Turn Sphinx roles into Markdown code spans and drop reST literal-block markers, in every docstring."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.is_alias or obj.docstring is None:
            return
        text = _ROLE.sub(r"`\1`", obj.docstring.value)
        text = _LITERAL_ALONE.sub("", text)
        obj.docstring.value = _LITERAL.sub(r"\1:", text)
