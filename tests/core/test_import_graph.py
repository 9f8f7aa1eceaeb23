"""The house rules, checked on the source (every ``import`` statement, at module level or inside a function):

* no model family imports another: what two families share lives in :mod:`qe.core`;
* the core imports nothing of ``qe`` above it (only itself, :mod:`qe.errors`, :mod:`qe.version`);
* the data layer imports no family and no front end;
* the shared Hugging Face training layer (:mod:`qe.hf`: the sequence-classifier LightningModule, its data module and
  networks, which GRUEN's classifiers and the content aligner both train) sits above the core and below the families:
  it imports only the core, :mod:`qe.errors`, :mod:`qe.version` and :mod:`qe.training`, never a family or the front
  end;
* no family or core module imports the front end (CLI, Hydra apps, sweeps, the zoo, the meta-evaluation);
* no import circle among qe's modules (``a`` imports ``b`` imports ... ``a``), counting imports inside functions
  too: a circle that only works because one side imports late is a layering fault waiting to bite (the registry
  loaded archives through the zoo, whose archives and fingerprints loaded exports through the registry; export
  loading now sits one layer down, in :mod:`qe.kinds`).

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
#: what the shared HF training layer (qe.hf) may import besides itself
HF_ALLOWED = {"core", "errors", "version", "training"}


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


#: known cross-family imports, each as (importer, imported) with the reason it is tolerated and what would remove it;
#: anything else fails. Empty: the last two (qe.content.task -> qe.gruen.task / qe.gruen.data, the content aligner
#: training GRUEN's Hugging Face classifier) went when that classifier moved to qe.hf, which both families import.
KNOWN_CROSS_FAMILY: set[tuple[str, str]] = set()


def violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for src, targets in sorted(graph.items()):
        a = area(src)
        for t in sorted(targets):
            b = area(t)
            if a == b or (src, t) in KNOWN_CROSS_FAMILY:
                continue
            if a in FAMILIES and b in FAMILIES:
                bad.append(f"{src} -> {t}: a family imports another family (move the shared code to qe.core)")
            elif a == "core" and b not in {"errors", "version"}:
                bad.append(f"{src} -> {t}: the core imports something above it")
            elif a == "data" and (b in FAMILIES or b in FRONT):
                bad.append(f"{src} -> {t}: the data layer imports a family or the front end")
            elif a in FAMILIES and b in FRONT:
                bad.append(f"{src} -> {t}: a family imports the front end")
            elif a == "hf" and b not in HF_ALLOWED:
                bad.append(f"{src} -> {t}: the HF training layer imports a family, the front end or another layer "
                           f"(it may import {sorted(HF_ALLOWED)})")
    return bad


def test_the_graph_sees_the_package():
    g = import_graph()
    assert {area(m) for m in g} >= FAMILIES | {"core", "data", "hf"}
    # relative and function-level imports are resolved too
    assert "qe.core.runtime" in g["qe.core.encoder"]
    assert any(t.startswith("qe.core.mr") for t in g["qe.ratpred.mr"])


def test_no_family_imports_another_and_the_core_stays_at_the_bottom():
    assert violations(import_graph()) == []


def test_the_families_share_the_hf_classifier_through_qe_hf():
    """GRUEN's classifiers and the content aligner train the one HF classifier of qe.hf; the core imports no qe.hf
    (the core is below it)."""
    g = import_graph()
    assert "qe.hf.classifier" in g["qe.content.task"] and "qe.hf.classifier" in g["qe.gruen.task"]
    assert not {t for t in g["qe.content.task"] if area(t) == "gruen"}
    assert not {t for m, ts in g.items() if area(m) == "core" for t in ts if area(t) == "hf"}


@pytest.mark.parametrize("src, body, rule", [
    ("qe/ensemble/scorer.py", "def f():\n    from qe.ratpred.model import RatPredNet\n", "another family"),
    ("qe/core/runtime.py", "import qe\n", "above it"),
    ("qe/data/record.py", "from qe.lm import scorer\n", "data layer"),
    ("qe/gruen/pll.py", "from ..zoo import build\n", "front end"),
    ("qe/hf/classifier.py", "from qe.gruen import format\n", "HF training layer"),
    ("qe/hf/data.py", "def f():\n    from ..cli import main\n", "HF training layer"),
    ("qe/hf/model.py", "import qe.registry\n", "HF training layer"),
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


# ----------------------------------------------------------------------------------------------------- import circles
#: import circles known elsewhere in the package, each as its sorted modules; none today. A new circle fails the test;
#: one listed here that is gone fails it too (remove it from the list).
KNOWN_CYCLES: list[list[str]] = []


def module_graph(root: Path = QE, *, module_level: bool = False) -> dict[str, set[str]]:
    """``{module: {qe module it imports}}`` with ``from pkg import name`` resolved to the module ``pkg.name`` when
    there is one (``from qe import zoo`` imports ``qe.zoo``, not just ``qe``), and an import of a name that is not a
    module to the module holding it. ``module_level``: only the statements at module level (what runs on import);
    otherwise imports inside functions count too. The parents a Python import also runs (``qe.zoo.archive`` runs
    ``qe/zoo/__init__.py``) are not edges: every module would then be in a circle with ``qe``."""
    files = {}
    for p in root.rglob("*.py"):
        parts = p.relative_to(root.parent).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    out: dict[str, set[str]] = {m: set() for m in files}
    for mod, p in files.items():
        pkg = mod.split(".") if p.name == "__init__.py" else mod.split(".")[:-1]
        tree = ast.parse(p.read_text(encoding="utf-8"), str(p))
        for node in (tree.body if module_level else ast.walk(tree)):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(pkg[:len(pkg) - node.level + 1]) if node.level else ""
                src = ".".join(x for x in (base, node.module or "") if x)
                targets = [f"{src}.{a.name}" if f"{src}.{a.name}" in files else src for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in files:  # qe.zoo.build.Recipe -> qe.zoo.build
                    t = t.rpartition(".")[0]
                if t and t != mod:
                    out[mod].add(t)
    return out


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected groups of two or more modules, each sorted, the list sorted."""
    import networkx as nx  # a dependency of torch, so of qe

    g = nx.DiGraph([(a, b) for a, bs in graph.items() for b in bs])
    return sorted(sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1)


def test_the_module_graph_resolves_submodules_and_late_imports():
    g = module_graph()
    assert "qe.zoo.archive" in g["qe.registry"]  # inside load(): qe.load of an archive
    assert "qe.zoo" in g["qe.zoo.build"]  # `from qe import zoo as _names`
    assert "qe.zoo.fingerprint" in g["qe.zoo.build"] and "qe.kinds" in g["qe.zoo.fingerprint"]
    assert "qe.zoo.archive" not in module_graph(module_level=True)["qe.registry"]


def test_no_import_cycles():
    for module_level in (True, False):
        assert import_cycles(module_graph(module_level=module_level)) == KNOWN_CYCLES, module_level
    # the circle qe.registry -> qe.zoo.archive -> qe.zoo.fingerprint -> qe.registry (and the shorter one through
    # archive's install check) is gone: the zoo loads exports through qe.kinds, below the registry
    g = module_graph()
    for m in ("qe.zoo.archive", "qe.zoo.fingerprint", "qe.zoo.card", "qe.zoo", "qe.kinds"):
        assert "qe.registry" not in g[m], m
    # qe.kinds may read the zoo's names from the package module (coverage's aligner= takes a zoo name), never its
    # builder, archives or fingerprints; and that package module imports neither qe.kinds nor the registry
    assert not {t for t in g["qe.kinds"] if t.startswith("qe.zoo.")}
    assert not {t for t in g["qe.zoo"] if t in ("qe.kinds", "qe.registry") or t.startswith("qe.zoo.")}


def test_an_import_cycle_is_found(tmp_path):
    """The check is not vacuous: a planted circle through a late import and a `from pkg import module` is found."""
    root = tmp_path / "qe"
    (root / "zoo").mkdir(parents=True)
    for f, body in {"__init__.py": "", "registry.py": "def load():\n    from qe.zoo.archive import fetch\n",
                    "zoo/__init__.py": "", "zoo/archive.py": "from qe.zoo import fingerprint\n",
                    "zoo/fingerprint.py": "def compute():\n    from qe import registry\n"}.items():
        (root / f).write_text(body)
    cycle = ["qe.registry", "qe.zoo.archive", "qe.zoo.fingerprint"]
    assert import_cycles(module_graph(root)) == [cycle]
    assert import_cycles(module_graph(root, module_level=True)) == []
