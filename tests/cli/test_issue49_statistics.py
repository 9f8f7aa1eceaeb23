"""Issue 49, item 6: every system figure the CLI prints says which statistic it is and which direction is better:
the coverage scorer's per-output score is coverage (higher is better), its corpus-level figure the pooled slot error
rate (SER, lower is better). Tables name both in their headers, JSON carries the names next to the numbers, and
`-b` keeps one number per line on stdout with one line on stderr saying what the numbers are."""
import json
import re
import shutil

import pytest

from qe.cli import main
from qe.registry import SCORERS, register_scorer

#: the coverage scorer with the rules alone (no lexicon mined from the data directory), for runs with several -m
#: (an --opt goes to every -m)
RULES = "test-coverage-rules"


@pytest.fixture(autouse=True, scope="module")
def _rules_coverage():
    if RULES not in SCORERS:
        from qe.content.scorer import CoverageScorer

        register_scorer(RULES)(lambda **kw: CoverageScorer(**{"lexicon": "none", **kw}))


def _coverage_files(tmp_path):
    (tmp_path / "mrs.txt").write_text("name[A], food[Thai]\nname[B], food[French]\n", encoding="utf-8")
    (tmp_path / "a.txt").write_text("A serves Thai food .\nB serves French food .\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("A is a pub .\nB is a pub .\n", encoding="utf-8")
    return ["--opt", "lexicon=none", "--mrs", str(tmp_path / "mrs.txt")]


def _bleu_files(tmp_path):
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("the cat sat on the mat\na dog ran in the park\n")
    ref.write_text("the cat sat on a mat\na dog ran through the park\n")
    return hyp, ref


def test_system_table_headers_name_the_statistic_and_direction(tmp_path, capsys):
    opts = _coverage_files(tmp_path)
    assert main(["score", "-m", "coverage", *opts, "-i", str(tmp_path / "a.txt"), "-i", str(tmp_path / "b.txt"),
                 "--system-level", "-q"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^system\s+n\s+undefined\s+mean coverage ↑\s+corpus SER ↓\s+bootstrap mean", out, re.M), out
    # the note under the table says it in words too, and the one signature stays one line
    note = next(ln for ln in out.splitlines() if ln.startswith("mean coverage ↑:"))
    assert "higher is better" in note and "corpus SER ↓: the slot error rate" in note and "lower is better" in note
    assert sum(ln.startswith("signature: ") for ln in out.splitlines()) == 1
    # a metric without a corpus-level score says so; one whose corpus score is the metric itself names it
    assert main(["score", "-m", "length", "-i", str(tmp_path / "a.txt"), "--system-level", "-q"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^system\s+n\s+undefined\s+mean length ↑\s+corpus\s+bootstrap", out, re.M), out
    assert "length has no corpus-level score" in out
    hyp, ref = _bleu_files(tmp_path)
    assert main(["score", "-m", "bleu", "-i", str(hyp), "-r", str(ref), "--system-level", "-q"]) == 0
    assert re.search(r"mean BLEU-4 ↑\s+corpus BLEU-4 ↑", capsys.readouterr().out)


def test_multi_metric_table_names_each_column(tmp_path, capsys):
    _coverage_files(tmp_path)
    args = ["score", "-m", RULES, "-m", "length", "--mrs", str(tmp_path / "mrs.txt"), "-i", str(tmp_path / "a.txt"),
            "-i", str(tmp_path / "b.txt"), "--system-level", "-q"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert re.search(rf"^system\s+n\s+{RULES} \(corpus SER ↓\)\s+length \(mean length ↑\)\s*$", out, re.M), out
    assert "↑ higher is better, ↓ lower is better" in out
    assert "the column: corpus SER, lower is better" in out and "the column: mean length, higher is better" in out


def test_json_figures_carry_their_statistic_and_direction(tmp_path, capsys):
    opts = _coverage_files(tmp_path)
    inputs = ["-i", str(tmp_path / "a.txt"), "-i", str(tmp_path / "b.txt")]
    assert main(["score", "-m", "coverage", *opts, *inputs, "--system-level", "--json", "-q"]) == 0
    table = json.loads(capsys.readouterr().out)
    # the fields users parse are all still there
    assert table["metric"] == "coverage" and table["higher_is_better"] is True
    assert table["corpus_higher_is_better"] is False
    assert table["mean_statistic"] == "coverage" and table["corpus_statistic"] == "SER"
    assert "slot error rate" in table["corpus_description"]
    for row in table["systems"]:
        assert {"system", "n", "mean", "corpus", "ci", "ci_of"} <= set(row)
        assert (row["mean_statistic"], row["mean_higher_is_better"]) == ("coverage", True)
        assert (row["corpus_statistic"], row["corpus_higher_is_better"]) == ("SER", False)
    assert [r["corpus"] for r in table["systems"]] == [0.0, 0.5]
    # several metrics: per metric and per figure
    assert main(["score", "-m", RULES, "-m", "length", "--mrs", str(tmp_path / "mrs.txt"), *inputs, "--system-level",
                 "--json", "-q"]) == 0
    multi = json.loads(capsys.readouterr().out)
    meta = {m["metric"]: m for m in multi["metrics"]}
    assert meta[RULES]["corpus_statistic"] == "SER" and meta["length"]["corpus_statistic"] is None
    assert meta[RULES]["corpus_higher_is_better"] is False and meta[RULES]["mean_statistic"] == "coverage"
    cov = multi["systems"][0]["scores"][RULES]
    assert cov["corpus_statistic"] == "SER" and cov["corpus_higher_is_better"] is False
    length = multi["systems"][0]["scores"]["length"]
    assert length["mean_statistic"] == "length" and length["corpus_statistic"] is None


def test_score_only_keeps_one_number_per_line_and_names_it_on_stderr(tmp_path, capsys):
    opts = _coverage_files(tmp_path)
    assert main(["score", "-m", "coverage", *opts, "-i", str(tmp_path / "b.txt"), "-b"]) == 0
    cap = capsys.readouterr()
    assert cap.out.splitlines() == ["0.5000"]  # sacrebleu -b: a number and nothing else
    notes = [ln for ln in cap.err.splitlines() if "-b prints" in ln]
    assert notes == ["qe score: -b prints coverage's corpus statistic: slot error rate (SER), lower is better"]
    # -q: the number alone
    assert main(["score", "-m", "coverage", *opts, "-i", str(tmp_path / "b.txt"), "-b", "-q"]) == 0
    cap = capsys.readouterr()
    assert cap.out.splitlines() == ["0.5000"] and cap.err == ""
    # a metric whose -b number is the mean of its per-output scores needs no note
    assert main(["score", "-m", "length", "-i", str(tmp_path / "b.txt"), "-b"]) == 0
    assert "-b prints" not in capsys.readouterr().err
    # several metrics: still one line on stderr, naming each
    hyp, ref = _bleu_files(tmp_path)
    assert main(["score", "-m", "bleu", "-m", "length", "-i", str(hyp), "-r", str(ref), "-b"]) == 0
    cap = capsys.readouterr()
    assert len(cap.out.splitlines()) == 2
    (note,) = [ln for ln in cap.err.splitlines() if "-b prints" in ln]
    assert "BLEU-4's corpus statistic: corpus-level BLEU-4, higher is better" in note and "length's mean" in note


def test_compare_ser_names_ser_and_lower_is_better(tmp_path, capsys):
    opts = _coverage_files(tmp_path)
    args = ["compare", "-m", "coverage", *opts, str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "--ser", "-q"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert re.search(r"^system\s+corpus SER ↓ \(mean ± 95% CI\)", out, re.M), out
    assert "corpus SER ↓: the slot error rate" in out and "lower is better" in out
    assert main([*args, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["statistic"] == "ser" and res["higher_is_better"] is False  # as before
    assert res["statistic_name"] == "SER" and "slot error rate" in res["statistic_description"]
    assert all(r["statistic_name"] == "SER" and r["higher_is_better"] is False for r in res["systems"])
    # without --ser: the mean coverage, higher is better
    assert main([a for a in args if a != "--ser"] + ["--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["statistic_name"] == "coverage" and res["statistic_label"] == "mean coverage"
    assert res["higher_is_better"] is True
    # a metric compared on its corpus-level score names that
    hyp, ref = _bleu_files(tmp_path)
    shutil.copy(hyp, tmp_path / "hyp2.txt")
    assert main(["compare", "-m", "bleu", "-r", str(ref), str(hyp), str(tmp_path / "hyp2.txt"), "--json", "-q"]) == 0
    assert json.loads(capsys.readouterr().out)["statistic_label"] == "corpus BLEU-4"
