"""The one registry table: every name resolves lazily; an export whose manifest kind disagrees with its files is
refused before any loader runs."""
import json
import subprocess
import sys

import numpy as np
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
def lm_export(tmp_path, tiny_corpus):
    from qe.lm.format import save, unigram_logprobs
    from qe.lm.model import LSTMLM
    from qe.tokenization import WordTokenizer

    tok = WordTokenizer.train(tiny_corpus, max_size=100)
    cfg = dict(vocab_size=tok.vocab_size, embedding_dim=8, hidden_size=8, num_layers=1, dropout=0.0,
               tie_weights=True, pad_id=0)
    logp, _ = unigram_logprobs([np.array(tok.encode(s)) for s in tiny_corpus], tok.vocab_size)
    return save(tmp_path / "lm", LSTMLM(**cfg), tok, logp, cfg)


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
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
