import json
import math

import pytest

from qe.cli import main


@pytest.fixture
def export(tiny_lm_export):
    return tiny_lm_export


def test_qe_score_txt_and_jsonl(tmp_path, export, capsys):
    txt = tmp_path / "outs.txt"
    txt.write_text("the cat sat .\n\na dog\n")
    out = tmp_path / "scores.jsonl"
    assert main(["score", "--model", str(export), "--input", str(txt), "--output", str(out), "-q"]) == 0
    rows = [json.loads(l) for l in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["outs-1", "outs-2", "outs-3"]
    assert rows[1]["score"] is None and math.isfinite(rows[0]["score"])
    j = tmp_path / "r.jsonl"
    j.write_text('{"id": "x", "output": "the cat sat ."}\n')
    assert main(["score", "-m", str(export), "-i", str(j), "--opt", "score=ppl"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out.splitlines()[0])["score"] > 1.0
    assert "WordPPL|" in cap.err


def test_qe_list(capsys):
    assert main(["list"]) == 0
    assert "slor" in capsys.readouterr().out
