"""The house rules, checked on the source (every ``import`` statement, at module level or inside a function):

* no model family imports another: what two families share lives in :mod:`qe.core`;
* the core imports nothing of ``qe`` above it (only itself, :mod:`qe.errors`, :mod:`qe.version`);
* the data layer imports no family and no front end;
* no family or core module imports the front end (CLI, Hydra apps, sweeps, the zoo, the meta-evaluation).

Run-time imports (the scorer side never loading Lightning or Hydra) are checked in ``test_registry.py``.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

QE = Path(__file__).resolve().parents[2] / "qe"
FAMILIES = {"lm", "ratpred", "gruen", "discourse", "refmetrics", "ensemble", "content"}
FRONT = {"cli", "app", "sweep", "zoo", "evaluation"}


def import_graph(root: Path = QE) -> dict[str, set[str]]:
    """``{module: {imported qe module, ...}}`` over every ``.py`` under ``root`` (relative imports resolved)."""
    out: dict[str, set[str]] = defaultdict(set)
    for p in root.rglob("*.py"):
        parts = p.relative_to(root.parent).with_suffix("").parts
        pkg = parts[:-1]
        mod = ".".join(pkg if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"), str(p))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg[:len(pkg) - node.level + 1]
                    names = [".".join(base) + (f".{node.module}" if node.module else "")]
                else:
                    names = [node.module or ""]
            else:
                continue
            out[mod].update(n for n in names if n == "qe" or n.startswith("qe."))
    return out


def area(module: str) -> str:
    """``qe.ratpred.task`` -> ``ratpred``; ``qe.registry`` -> ``registry``; ``qe`` -> ``qe``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "qe"


def violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for src, targets in sorted(graph.items()):
        a = area(src)
        for t in sorted(targets):
            b = area(t)
            if a == b:
                continue
            if a in FAMILIES and b in FAMILIES:
                bad.append(f"{src} -> {t}: a family imports another family (move the shared code to qe.core)")
            elif a == "core" and b not in {"errors", "version"}:
                bad.append(f"{src} -> {t}: the core imports something above it")
            elif a == "data" and (b in FAMILIES or b in FRONT):
                bad.append(f"{src} -> {t}: the data layer imports a family or the front end")
            elif a in FAMILIES and b in FRONT:
                bad.append(f"{src} -> {t}: a family imports the front end")
    return bad


def test_the_graph_sees_the_package():
    g = import_graph()
    assert {area(m) for m in g} >= FAMILIES | {"core", "data"}
    # relative and function-level imports are resolved too
    assert "qe.core.runtime" in g["qe.core.encoder"]
    assert any(t.startswith("qe.core.mr") for t in g["qe.ratpred.mr"])


def test_no_family_imports_another_and_the_core_stays_at_the_bottom():
    assert violations(import_graph()) == []


@pytest.mark.parametrize("src, body, rule", [
    ("qe/ensemble/scorer.py", "def f():\n    from qe.ratpred.model import RatPredNet\n", "another family"),
    ("qe/core/runtime.py", "import qe\n", "above it"),
    ("qe/data/record.py", "from qe.lm import scorer\n", "data layer"),
    ("qe/gruen/pll.py", "from ..zoo import build\n", "front end"),
])
def test_a_violation_is_reported(tmp_path, src, body, rule):
    """The checker is not vacuous: each rule catches a planted import."""
    f = tmp_path / src
    f.parent.mkdir(parents=True)
    for d in [f.parent, *f.parent.parents]:
        if d == tmp_path:
            break
        (d / "__init__.py").touch()
    f.write_text(body)
    bad = violations(import_graph(tmp_path / "qe"))
    assert len(bad) == 1 and rule in bad[0], bad
