"""Names, number formats and markdown tables shared by the report's sections."""
from __future__ import annotations

import math
import sys
from typing import Any, Sequence

import numpy as np

CORR_NAMES = {"none": "no correction", "bonferroni": "Bonferroni-corrected", "holm": "Holm-corrected"}
ABBR = {"pearson": "r", "spearman": "ρ", "kendall": "τ"}
PROTOCOL_NAMES = {
    "none": "flatten (average_by=none): one correlation over all outputs",
    "sys": "per system, then averaged (average_by=sys)",
    "item": "per item, then averaged (average_by=item; summary level)",
    "system means": "system level, mean of instance scores: correlation of per-system means",
    "corpus score": "system level, corpus-level score: the metric computed over all outputs of each system",
}
SYSTEM_WAYS = {"system means": "mean of instance scores", "corpus score": "corpus-level score"}
UNDEFINED_NAMES = {
    "instance": "Instance level (every protocol)", "item_accuracy": "Pairwise accuracy within items",
    "errors": "Error measures", "perm_both": "PERM-BOTH", "between_datasets": "One metric across datasets",
    "pairs": "Pairwise system differences", "per_system": "Per-system breakdown",
    "agreement": "Correlations between criteria", "ceiling": "Human ceiling (agreement among annotators)",
    "confounds": "Confounds", "system": "System level (correlations)",
    "wmt": "WMT metrics-task view (acc23, SPA, rank clusters)",
}
#: how a p-value was obtained (``p_kind`` of a correlation row), for the footnotes of a table
P_KINDS = {"exact": "Kendall's exact null distribution (small sample, no ties)"}


def undefined_name(key: str) -> str:
    """The report's name for a skipped section (``Results.undefined`` key)."""
    if key.startswith("constant:"):
        return f"every correlation and test on `{key.split(':', 1)[1]}`"
    if key.startswith("constant_metric:"):
        return f"every correlation of the metric `{key.split(':', 1)[1]}`"
    return UNDEFINED_NAMES.get(key, key)


def _gpu() -> str:
    torch = sys.modules.get("torch")  # only report what a scorer actually had; never import torch for this
    if torch is not None and torch.cuda.is_available():
        return "GPU: " + torch.cuda.get_device_name(0)
    return "no GPU used" if torch is not None else "no GPU needed"


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    def cell(v):
        return str(v).replace("|", "\\|").replace("\n", " ")

    align = align or ("l" + "r" * (len(header) - 1))
    sep = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def fnum(v: Any, nd: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return f"{v:.{nd}f}"


def fp(p: float) -> str:
    if p is None or math.isnan(p):
        return "—"
    return "<0.001" if p < 0.001 else f"{p:.3f}"
