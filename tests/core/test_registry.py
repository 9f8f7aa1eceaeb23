"""The one registry table: every name resolves lazily; an export whose manifest kind disagrees with its files is
refused before any loader runs."""
import json
import subprocess
import sys

import pytest

import qe
from qe.cli import EXIT_BAD_MODEL, main
from qe.errors import ExportError
from qe.registry import EXPORT_KINDS, SCORERS, resolve_target


def test_every_table_entry_resolves_to_a_callable():
    for name, entry in SCORERS.items():
        assert callable(entry.resolve()), name
    for kind, target in EXPORT_KINDS.items():
        assert callable(resolve_target(target)), kind


def test_listing_imports_no_family():
    code = ("import sys, qe.cli; qe.cli.main(['list']); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'lightning', 'hydra', 'omegaconf') "
            "or m.startswith(('qe.lm', 'qe.ratpred', 'qe.gruen', 'qe.discourse', 'qe.refmetrics.'))]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


@pytest.fixture
def lm_export(tiny_lm_export):
    return tiny_lm_export


@pytest.mark.parametrize("wrong", ["svr", "acceptability", "qe_gru"])
def test_edited_manifest_kind_is_refused(lm_export, tmp_path, wrong, capsys):
    mf = lm_export / "qe_export.json"
    m = json.loads(mf.read_text())
    m["kind"] = wrong
    mf.write_text(json.dumps(m))
    with pytest.raises(ExportError, match=rf"manifest says kind .{wrong}.*(look like a|are those of a) .slor. export"):
        qe.load(lm_export)
    inp = tmp_path / "in.txt"
    inp.write_text("the cat sat .\n")
    assert main(["score", "-m", str(lm_export), "-i", str(inp)]) == EXIT_BAD_MODEL
    err = [x for x in capsys.readouterr().err.strip().splitlines() if not x.startswith("INFO ")]  # log lines aside
    assert len(err) == 1 and "manifest says kind" in err[0]


def test_no_scorer_imports_the_training_stack():
    """Issue 14: every registered scorer and export loader resolves without Lightning, Hydra, omegaconf or a
    family's training module (task.py)."""
    code = ("import sys\nfrom qe.registry import SCORERS, EXPORT_KINDS, resolve_target\n"
            "[e.resolve() for e in SCORERS.values()]\n[resolve_target(t) for t in EXPORT_KINDS.values()]\n"
            "import qe.cli\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('lightning', 'pytorch_lightning', 'hydra', "
            "'omegaconf') or m == 'qe.training' or (m.startswith('qe.') and m.endswith('.task')))\nprint(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
