"""The front door: `qe score` with plain files and pipes, system-level tables, `qe compare` equal to sacrebleu's
paired tests, and one-line errors with exit codes."""
import io
import json
import random
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from qe.cli import EXIT_BAD_INPUT, EXIT_BAD_MODEL, main

WORDS = "the a restaurant food is good cheap near river city centre family friendly italian serves pub".split()


def _sent(rng):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + " ."


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Two reference sets and three systems of 60 line-aligned outputs (seeded)."""
    d = tmp_path_factory.mktemp("sys")
    rng = random.Random(0)
    n = 60
    ref, ref2 = [_sent(rng) for _ in range(n)], [_sent(rng) for _ in range(n)]
    systems = {"a": [r if rng.random() < 0.3 else _sent(rng) for r in ref],
               "b": [r if rng.random() < 0.5 else _sent(rng) for r in ref],
               "c": [r if rng.random() < 0.35 else _sent(rng) for r in ref]}
    for name, lines in {"ref": ref, "ref2": ref2, **systems}.items():
        (d / f"{name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return d


def _json_lines(text):
    return [json.loads(x, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}")) for x in text.splitlines()]


# ------------------------------------------------------------------------------------------------ qe score
def test_ref_files_give_sacrebleus_sentence_and_corpus_bleu(files, capsys):
    import sacrebleu

    refs = [(files / f).read_text().splitlines() for f in ("ref.txt", "ref2.txt")]
    hyps = (files / "a.txt").read_text().splitlines()
    assert main(["score", "-m", "bleu", "-i", str(files / "a.txt"), "-r", str(files / "ref.txt"),
                 "-r", str(files / "ref2.txt"), "-q"]) == 0
    rows = _json_lines(capsys.readouterr().out)
    assert [r["output"] for r in rows] == hyps
    assert rows[0]["refs"] == [refs[0][0], refs[1][0]]
    for r, h, r1, r2 in zip(rows, hyps, *refs):
        want = sacrebleu.sentence_bleu(h, [r1, r2]).score / 100
        assert r["score"] == pytest.approx(want, abs=1e-12)
    assert main(["score", "-m", "bleu", "-i", str(files / "a.txt"), "-r", str(files / "ref.txt"),
                 "-r", str(files / "ref2.txt"), "--system-level", "--json", "-q"]) == 0
    table = json.loads(capsys.readouterr().out)
    (row,) = table["systems"]
    assert row["corpus"] == pytest.approx(sacrebleu.corpus_bleu(hyps, refs).score / 100, abs=1e-12)
    assert row["n"] == 60 and row["ci_of"] == "corpus"
    # the CI is sacrebleu's bootstrap (the numbers of `sacrebleu --confidence`)
    res = sacrebleu.metrics.BLEU().corpus_score(hyps, refs, n_bootstrap=1000)
    assert row["ci"] == pytest.approx([(res._mean - res._ci) / 100, (res._mean + res._ci) / 100], abs=1e-9)
    assert "BLEU-4" in table["signature"] and "bs:1000" in table["signature"]


def test_stdin_to_stdout_and_summary(files, capsys, monkeypatch):
    text = (files / "b.txt").read_text()
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    assert main(["score", "-m", "length", "-i", "-", "-o", "-"]) == 0
    cap = capsys.readouterr()
    rows = _json_lines(cap.out)
    assert [r["output"] for r in rows] == text.splitlines()
    assert rows[0]["score"] == len(rows[0]["output"].split())
    mean = np.mean([r["score"] for r in rows])
    assert f"60 outputs, 0 undefined, mean length {mean:.4f} (higher is better); written to standard output" in cap.err


def test_stdin_jsonl_with_format(capsys, monkeypatch):
    rows = [{"id": "x1", "output": "one two", "system": "S"}, {"id": "x2", "output": "three", "system": "T"}]
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(json.dumps(r) + "\n" for r in rows)))
    assert main(["score", "-m", "length", "-i", "-", "--format", "jsonl", "--system-level", "--json", "-q"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert {s["system"]: s["mean"] for s in table["systems"]} == {"S": 2.0, "T": 1.0}
    assert all(s["corpus"] is None for s in table["systems"])  # length has no corpus-level score


def test_several_inputs_are_several_systems(files, tmp_path, capsys):
    import sacrebleu

    ref = (files / "ref.txt").read_text().splitlines()
    out = tmp_path / "scores.jsonl"
    args = ["score", "-m", "chrf", "-r", str(files / "ref.txt"), "-o", str(out), "--system-level", "--json", "-q"]
    for s in "abc":
        args += ["-i", str(files / f"{s}.txt")]
    assert main(args) == 0
    table = {s["system"]: s for s in json.loads(capsys.readouterr().out)["systems"]}
    assert list(table) == ["a", "b", "c"]
    for s in "abc":
        hyps = (files / f"{s}.txt").read_text().splitlines()
        assert table[s]["corpus"] == pytest.approx(sacrebleu.corpus_chrf(hyps, [ref]).score / 100, abs=1e-12)
    rows = _json_lines(out.read_text())
    assert len(rows) == 180 and {r["system"] for r in rows} == {"a", "b", "c"}
    assert len({r["id"] for r in rows}) == 180


def test_system_level_table_is_readable(files, capsys):
    assert main(["score", "-m", "bleu", "-r", str(files / "ref.txt"), "-i", str(files / "a.txt"),
                 "-i", str(files / "b.txt"), "--system-level", "-q"]) == 0
    out = capsys.readouterr().out
    # the headers name each figure's statistic and direction (issue 49)
    assert re.search(r"^system\s+n\s+undefined\s+mean BLEU-4 ↑\s+corpus BLEU-4 ↑\s+bootstrap mean ± 95% CI", out, re.M)
    assert re.search(r"^a\s+60\s+0\s+0\.\d{4}\s+0\.\d{4}\s+0\.\d{4} ± 0\.\d{4} \(of the corpus\)", out, re.M)
    assert "signature: BLEU-4|" in out


def test_mrs_file_is_attached(tmp_path, capsys):
    (tmp_path / "out.txt").write_text("the pub is cheap\nblue\n")
    (tmp_path / "mrs.txt").write_text("name[The Eagle], priceRange[cheap]\nname[X]\n")
    assert main(["score", "-m", "length", "-i", str(tmp_path / "out.txt"), "--mrs", str(tmp_path / "mrs.txt"),
                 "-q"]) == 0
    rows = _json_lines(capsys.readouterr().out)
    assert rows[0]["mr"] == "name[The Eagle], priceRange[cheap]" and rows[1]["mr"] == "name[X]"


# ---------------------------------------------------------------------------------------------- qe compare
def _sacrebleu_cli(files, test, metric):
    # sacrebleu's own CLI, run by this interpreter (a console script found on PATH may belong to another environment)
    cmd = [sys.executable, "-m", "sacrebleu", str(files / "ref.txt"), str(files / "ref2.txt"), "-i", str(files / "a.txt"), str(files / "b.txt"),
           str(files / "c.txt"), "-m", metric, f"--paired-{test}", "-f", "text"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True, env={"SACREBLEU_SEED": "12345", "PATH": ""})
    # the score cell: "36.6 (36.0 ± 2.1)" with --paired-bs, "36.6" with --paired-ar (sacrebleu's CLI gives AR no CI)
    scores = [float(x) for x in re.findall(r"│\s*([\d.]+)(?: \([^)]*\))?\s*│\s*$", r.stdout, flags=re.M)]
    pvals = [float(x) for x in re.findall(r"p = ([\d.]+)", r.stdout)]
    return scores, pvals


@pytest.mark.parametrize("metric,name", [("bleu", "bleu"), ("chrf", "chrf"), ("ter", "ter")])
@pytest.mark.parametrize("test", ["bs", "ar"])
def test_compare_equals_sacrebleu_paired_tests(files, capsys, metric, name, test):
    want_scores, want_p = _sacrebleu_cli(files, test, metric)
    args = ["compare", "-m", name, "-r", str(files / "ref.txt"), "-r", str(files / "ref2.txt"),
            str(files / "a.txt"), str(files / "b.txt"), str(files / "c.txt"), f"--paired-{test}", "--json", "-q"]
    assert main(args) == 0
    got = json.loads(capsys.readouterr().out)
    systems = got["systems"]
    assert [s["system"] for s in systems] == ["a", "b", "c"] and systems[0]["baseline"]
    assert [round(s["score"] * 100, 1) for s in systems] == want_scores
    assert [round(s["p_value"], 4) for s in systems[1:]] == want_p
    for s in systems:
        assert set(s) >= {"score", "ci", "p_value"} and len(s["ci"]) == 2 and s["ci"][0] < s["score"] < s["ci"][1]


def test_generic_paired_test_has_sacrebleus_semantics(files):
    """The paired tests qe runs for non-sacrebleu metrics, fed BLEU's sufficient statistics, give sacrebleu's
    p-values and CIs exactly (same generator, same draws, same formula)."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    from qe.significance import SetStatistic, paired_test

    refs = [(files / f).read_text().splitlines() for f in ("ref.txt", "ref2.txt")]
    hyps = {s: (files / f"{s}.txt").read_text().splitlines() for s in "abc"}
    metric = BLEU()

    def stat(h):
        st = np.array(metric._extract_corpus_statistics(h, refs), dtype="float32")
        return SetStatistic(st, lambda m: np.array([metric._compute_score_from_stats(list(r)).score for r in m]),
                            "pooled")

    for test in ("bs", "ar"):
        ours = paired_test({k: stat(v) for k, v in hyps.items()}, test=test, ar_confidence=1000)
        _, theirs = PairedTest(list(hyps.items()), {"BLEU": BLEU()}, refs, test_type=test,
                               n_ar_confidence=1000)()
        for o, t in zip(ours, theirs["BLEU"]):
            assert o.score == pytest.approx(t.score, abs=1e-6)  # ours from float32 statistics, theirs from ints
            if t.p_value is not None:
                assert o.p_value == pytest.approx(t.p_value, abs=1e-12)
            assert o.mean == pytest.approx(t.mean, abs=1e-4) and o.ci == pytest.approx(t.ci, abs=1e-4)


def test_compare_instance_and_pooled_metrics(files, capsys):
    base = ["compare", "-r", str(files / "ref.txt"), str(files / "a.txt"), str(files / "b.txt"), "--json", "-q"]
    assert main(["compare", "-m", "nist", *base[1:]]) == 0
    nist = json.loads(capsys.readouterr().out)["systems"]
    import qe

    scorer = qe.load("nist")
    ref = (files / "ref.txt").read_text().splitlines()
    for row, name in zip(nist, "ab"):  # the score is corpus NIST on the pooled statistics, not a mean
        assert row["score"] == pytest.approx(scorer.corpus_score((files / f"{name}.txt").read_text().splitlines(),
                                                                 [[r] for r in ref]), rel=1e-6)
    assert 0 < nist[1]["p_value"] <= 1 and nist[0]["ci"][0] < nist[0]["score"] < nist[0]["ci"][1]
    assert main(["compare", "-m", "rouge-l", *base[1:], "--paired-ar", "--n", "2000"]) == 0
    rl = json.loads(capsys.readouterr().out)
    assert rl["n_samples"] == 2000 and 0 < rl["systems"][1]["p_value"] <= 1
    # the same seed gives the same numbers; another seed other resamples
    assert main(["compare", "-m", "rouge-l", *base[1:], "--paired-ar", "--n", "2000"]) == 0
    assert json.loads(capsys.readouterr().out) == rl
    assert main(["compare", "-m", "rouge-l", *base[1:], "--paired-ar", "--n", "2000", "--seed", "7"]) == 0
    assert json.loads(capsys.readouterr().out)["systems"][1]["p_value"] != rl["systems"][1]["p_value"]


def test_identical_systems_are_not_significant(files, tmp_path, capsys):
    shutil.copy(files / "a.txt", tmp_path / "copy.txt")
    for m in ("bleu", "length"):
        args = ["compare", "-m", m, "-r", str(files / "ref.txt"), str(files / "a.txt"), str(tmp_path / "copy.txt"),
                "--json", "-q"]
        assert main(args) == 0
        s = json.loads(capsys.readouterr().out)["systems"][1]
        assert s["p_value"] == 1.0 and s["significant"] is False


def test_compare_table_marks_significance(files, capsys):
    assert main(["compare", "-m", "bleu", "-r", str(files / "ref.txt"), "-r", str(files / "ref2.txt"),
                 str(files / "a.txt"), str(files / "b.txt"), str(files / "c.txt"), "-q"]) == 0
    out = capsys.readouterr().out
    scores, pvals = _sacrebleu_cli(files, "bs", "bleu")
    rows = re.findall(r"^(Baseline: a|b|c)\s+(0\.\d{4}) \(0\.\d{4} ± 0\.\d{4}\)\s+(-|[\d.]+)( \*)?$", out, re.M)
    assert [r[0] for r in rows] == ["Baseline: a", "b", "c"], out
    assert [round(float(r[1]) * 100, 1) for r in rows] == scores  # sacrebleu prints one decimal
    assert [float(r[2]) for r in rows[1:]] == pvals
    assert [bool(r[3]) for r in rows[1:]] == [p < 0.05 for p in pvals]
    assert "not corrected for multiple comparisons" in out and "signature: BLEU-4|" in out
    assert "sacrebleu signature of the scores, CIs and p-values: nrefs:2|bs:1000|seed:12345|" in out


# -------------------------------------------------------------------------------------------------- errors
def _one_line_error(capsys, code, args, *needles):
    assert main(args) == code
    # progress and "N records read" lines are log lines; the error is one line of its own
    err = [x for x in capsys.readouterr().err.strip().splitlines() if not x.startswith("INFO ")]
    assert len(err) == 1, err
    assert "Traceback" not in err[0]
    for n in needles:
        assert n in err[0], err[0]
    return err[0]


def test_errors_are_one_line(files, tmp_path, capsys, monkeypatch):
    a, ref = str(files / "a.txt"), str(files / "ref.txt")
    (tmp_path / "short.txt").write_text("one\ntwo\n")
    _one_line_error(capsys, EXIT_BAD_INPUT, ["score", "-m", "bleu", "-i", a, "-r", str(tmp_path / "short.txt")],
                    "short.txt has 2 lines", "a.txt has 60 outputs")
    _one_line_error(capsys, EXIT_BAD_INPUT, ["score", "-m", "bleu", "-i", a, "-r", str(tmp_path / "nope.txt")],
                    "nope.txt: no such file")
    _one_line_error(capsys, EXIT_BAD_INPUT, ["score", "-m", "bleu", "-i", a], "has no 'refs'", "BLEU-4")
    import torch

    if not torch.cuda.is_available():
        _one_line_error(capsys, EXIT_BAD_INPUT, ["score", "-m", "length", "-i", a, "--device", "cuda"],
                        "--device cuda: this machine has no CUDA device")
    _one_line_error(capsys, EXIT_BAD_INPUT, ["score", "-m", "length", "-i", a, "--json"], "--json")
    _one_line_error(capsys, EXIT_BAD_INPUT, ["compare", "-m", "bleu", "-r", ref, a, str(tmp_path / "short.txt")],
                    "short.txt has 2 outputs")
    _one_line_error(capsys, EXIT_BAD_MODEL, ["compare", "-m", "no-such-metric", "-r", ref, a, a], "no-such-metric")
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    _one_line_error(capsys, EXIT_BAD_INPUT, ["score", "-m", "length", "-i", "-", "--resume", "-o",
                                             str(tmp_path / "o.jsonl")], "--resume")


def test_missing_spacy_pipeline_names_the_install(tmp_path, capsys):
    from qe.errors import MissingDependencyError
    from qe.core.offline import load_spacy

    with pytest.raises(MissingDependencyError, match=r"python -m spacy download en_core_web_xx"):
        load_spacy("en_core_web_xx")
    (tmp_path / "o.txt").write_text("The cat sat. It was happy.\n")
    _one_line_error(capsys, EXIT_BAD_MODEL, ["score", "-m", "ds-focus-nn", "-i", str(tmp_path / "o.txt"), "-r",
                                             str(tmp_path / "o.txt"), "--opt", "spacy_model=en_core_web_xx", "-q"],
                    "spaCy pipeline 'en_core_web_xx' is not installed")


def test_version(capsys):
    from qe.version import __version__

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"qe {__version__}"


def test_device_option_is_ignored_by_scorers_without_a_model(files, capsys):
    """--device cpu with a metric that runs no model (length, BLEU) scores as without it (it used to be a
    TypeError: the constructor takes no device)."""
    args = ["score", "-m", "bleu", "-i", str(files / "a.txt"), "-r", str(files / "ref.txt"), "-q"]
    assert main(args) == 0
    plain = capsys.readouterr().out
    assert main([*args, "--device", "cpu"]) == 0
    assert capsys.readouterr().out == plain
    from qe.evaluation.scoring import ScorerSpec, load_scorer

    assert load_scorer(ScorerSpec(label="length", model="length"), device="cpu").name == "length"
