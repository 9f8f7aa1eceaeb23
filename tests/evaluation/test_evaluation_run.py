"""evaluate.py / qe evaluate end to end: config, scorers from names and exports, checkpoints, clear errors."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.stats
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

import qe
from qe.evaluation.runner import run_evaluation
from qe.evaluation.scoring import EvaluationConfigError
from qe.core.scorer import Scorer
from tests.conftest import REPO, needs_data

FAST = ["stats.bootstrap.n=100", "stats.permutation.n=100", "progress=false"]
CALLS = {"count": 0}


@qe.register_scorer("test-overlap")
class _RefOverlap(Scorer):
    """Needs references: share of output tokens found in any reference (a tiny real reference-based metric)."""

    name = "test-overlap"
    requires_refs = True

    def _score(self, outputs, *, refs, **kw):
        out = []
        for o, rs in zip(outputs, refs):
            toks = o.split()
            vocab = {t for r in rs for t in r.split()}
            out.append(sum(t in vocab for t in toks) / len(toks) if toks else math.nan)
        return out


@qe.register_scorer("test-counting")
class _Counting(Scorer):
    name = "test-counting"

    def _score(self, outputs, **kw):
        CALLS["count"] += 1
        return [float(len(o)) for o in outputs]


@qe.register_scorer("test-nan")
class _NaNEveryTenth(Scorer):
    name = "test-nan"

    def _score(self, outputs, **kw):
        return [math.nan if i % 10 == 0 else float(len(o)) for i, o in enumerate(outputs)]


@qe.register_scorer("test-boom")
class _Boom(Scorer):
    name = "test-boom"

    def _score(self, outputs, **kw):
        raise RuntimeError("boom: scorer crashed")


@pytest.fixture
def cfg_for(tmp_path):
    def make(*overrides):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
            return compose("evaluate", overrides=[f"output_dir={tmp_path / 'run'}", *FAST, *overrides])

    yield make
    GlobalHydra.instance().clear()


def _scores(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def test_sample_end_to_end_with_name_export_and_refs_scorer(cfg_for, tmp_path, tiny_corpus):
    from qe.lm.model import LSTMLM
    from qe.lm.task import save_lm_export, unigram_logprobs
    from qe.core.tokenization import WordTokenizer

    tok = WordTokenizer.train(tiny_corpus, max_size=100)
    torch.manual_seed(0)
    mcfg = dict(vocab_size=tok.vocab_size, embedding_dim=16, hidden_size=16, num_layers=1, dropout=0.0,
                tie_weights=True, pad_id=0)
    logp, _ = unigram_logprobs([np.array(tok.encode(s)) for s in tiny_corpus], tok.vocab_size)
    export = save_lm_export(tmp_path / "tiny_lm", LSTMLM(**mcfg), tok, logp, mcfg)

    cfg = cfg_for(f"models=[{export}]", "+scorers.overlap.model=test-overlap", "plots.dpi=40",
                  "ratings=[quality,naturalness]")
    res = run_evaluation(cfg)
    out = tmp_path / "run"
    rows = _scores(out / "scores.jsonl")
    assert len(rows) == 120 and rows[0]["id"] == "sample-0001"
    assert set(rows[0]) == {"id", "system", "dataset", "item", "ratings", "scores"}
    assert set(rows[0]["scores"]) == {"length", "overlap", "tiny_lm"}
    # refs came from the records: the overlap scorer saw them
    assert 0 < rows[0]["scores"]["overlap"] <= 1
    meta = json.loads((out / "scores.meta.json").read_text())
    assert "export:" in meta["metrics"]["tiny_lm"]["signature"]
    report = (out / "report.md").read_text()
    for heading in ("## Instance level — protocol: flatten", "## Summary level — protocol: per item",
                    "## System level", "### all · excluding human", "## Error measures", "## Comparing metrics",
                    "## Pairwise system differences", "Holm-corrected"):
        assert heading in report, heading
    assert meta["metrics"]["tiny_lm"]["signature"].replace("|", "\\|") in report
    for kind in ("scatter", "bands", "systems"):
        assert (out / "figures" / f"{kind}_quality.png").stat().st_size > 1000
        assert f"figures/{kind}_quality.png" in report
    # the numbers in the report are the numbers of scores.jsonl
    c = res["results"].correlations
    h = np.array([r["ratings"]["quality"] for r in rows])
    m = np.array([r["scores"]["length"] for r in rows])
    row = c.query("level == 'instance' and protocol == 'none' and subset == 'all' and rating == 'quality' "
                  "and metric == 'length' and method == 'spearman'").iloc[0]
    assert row.r == pytest.approx(scipy.stats.spearmanr(m, h).statistic)
    assert f"{row.r:.3f}" in report


def test_checkpoint_survives_a_crash_and_resume_skips_finished_scorers(cfg_for, tmp_path):
    out = tmp_path / "run"
    with pytest.raises(RuntimeError, match="boom"):
        run_evaluation(cfg_for("scorer=[]", "+scorers.count.model=test-counting", "+scorers.zboom.model=test-boom"))
    rows = _scores(out / "scores.jsonl")
    assert "count" in rows[0]["scores"] and "zboom" not in rows[0]["scores"]
    calls = CALLS["count"]
    run_evaluation(cfg_for("scorer=[]", "+scorers.count.model=test-counting", "plots.enabled=false"))
    assert CALLS["count"] == calls  # reused, not rescored
    run_evaluation(cfg_for("scorer=[]", "+scorers.count.model=test-counting", "plots.enabled=false", "resume=false"))
    assert CALLS["count"] == calls + 1


def test_resume_scores_again_where_the_scorer_is_no_longer_the_one_that_made_the_scores(cfg_for, tmp_path, caplog,
                                                                                       monkeypatch):
    """The same config entry may be another scorer after an upgrade (a new lexicon, new weights): its signature
    says so, and stale scores are not reused silently."""
    out = tmp_path / "run"
    run_evaluation(cfg_for("scorer=[]", "+scorers.count.model=test-counting", "plots.enabled=false"))
    calls = CALLS["count"]
    old = _Counting.signature
    monkeypatch.setattr(_Counting, "signature", property(lambda self: old.fget(self).with_fields(lexicon="v2")))
    with caplog.at_level("WARNING"):
        run_evaluation(cfg_for("scorer=[]", "+scorers.count.model=test-counting", "plots.enabled=false"))
    assert CALLS["count"] == calls + 1
    assert "were made by test-counting" in caplog.text and "scoring again" in caplog.text
    meta = json.loads((out / "scores.meta.json").read_text())
    assert "lexicon:v2" in meta["metrics"]["count"]["signature"]
    # and with the signature unchanged the next run reuses them
    run_evaluation(cfg_for("scorer=[]", "+scorers.count.model=test-counting", "plots.enabled=false"))
    assert CALLS["count"] == calls + 1
    # a scorer that cannot be loaded here (its weights are elsewhere) keeps its finished scores, and says so
    import qe.evaluation.scoring as scoring

    def unloadable(spec, device=None):
        raise OSError("no weights here")

    monkeypatch.setattr(scoring, "load_scorer", unloadable)
    caplog.clear()
    with caplog.at_level("WARNING"):
        run_evaluation(cfg_for("scorer=[]", "+scorers.count.model=test-counting", "plots.enabled=false"))
    assert CALLS["count"] == calls + 1
    assert "cannot load it to check" in caplog.text and "no weights here" in caplog.text


PICKED = {"table": "v1"}


@qe.register_scorer("test-picking")
class _Picking(Scorer):
    """Its signature names what the inputs picked, as ``coverage --opt lexicon=auto`` does: ``auto`` before it has
    scored anything, ``auto[table:<version>]`` after."""

    name = "test-picking"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.used = None

    def signature_fields(self):
        return {"lexicon": "auto" if self.used is None else f"auto[table:{self.used}]"}

    def signature_for(self, made_by):
        import re

        m = re.search(r"lexicon:(auto(?:\[[^\]|]*\])?)", str(made_by))
        if m is None or m.group(1) == "auto":
            return self.signature
        return self.signature.with_fields(lexicon=f"auto[table:{PICKED['table']}]")

    def _score(self, outputs, **kw):
        CALLS["count"] += 1
        self.used = PICKED["table"]
        return [float(len(o)) for o in outputs]


def test_resume_sees_a_change_in_what_the_inputs_picked(cfg_for, tmp_path, caplog, monkeypatch):
    """A signature that names what the inputs picked is recorded after scoring, and the resume compares the scores'
    signature with what the scorer would pick now: a loaded scorer that has scored nothing says only ``auto``."""
    out = tmp_path / "run"
    run_evaluation(cfg_for("scorer=[]", "+scorers.pick.model=test-picking", "plots.enabled=false"))
    meta = json.loads((out / "scores.meta.json").read_text())
    assert "lexicon:auto[table:v1]" in meta["metrics"]["pick"]["signature"]
    calls = CALLS["count"]
    run_evaluation(cfg_for("scorer=[]", "+scorers.pick.model=test-picking", "plots.enabled=false"))
    assert CALLS["count"] == calls  # the same table: reused
    monkeypatch.setitem(PICKED, "table", "v2")
    with caplog.at_level("WARNING"):
        run_evaluation(cfg_for("scorer=[]", "+scorers.pick.model=test-picking", "plots.enabled=false"))
    assert CALLS["count"] == calls + 1 and "scoring again" in caplog.text
    assert "lexicon:auto[table:v2]" in json.loads((out / "scores.meta.json").read_text())["metrics"]["pick"]["signature"]


def test_coverage_auto_answers_for_the_lexicons_its_scores_were_made_with(monkeypatch):
    from qe.content import shipped
    from qe.content.lexicon import Lexicon

    sc = qe.load("coverage")
    assert "lexicon:auto|" in str(sc.signature)  # nothing scored: nothing picked
    sc.score(["The Eagle is a pub."], mrs=["name[The Eagle], eatType[pub]"])
    made = str(sc.signature)
    assert "lexicon:auto[e2e:" in made
    fresh = qe.load("coverage")
    assert str(fresh.signature_for(made)) == made
    # a bare auto names no lexicon (recorded before scoring, by an older qe): it matches nothing
    assert "lexicon:auto[unrecorded]" in str(fresh.signature_for(str(fresh.signature)))
    # the same lexicon's name with other contents (mined again): the checksum it has now shows
    d = shipped.load("e2e").to_dict()
    d["slots"].pop(sorted(d["slots"])[0])
    other = Lexicon.from_dict(d)
    changed = qe.load("coverage")
    monkeypatch.setattr(changed.matcher, "lexicons", lambda: {"e2e": other})
    assert str(changed.signature_for(made)) != made and "lexicon:auto[e2e:" in str(changed.signature_for(made))
    # a scorer with a named lexicon has nothing to pick: its signature
    named = qe.load("coverage", lexicon="e2e")
    assert named.signature_for(made) == named.signature


def test_a_run_naming_fewer_scorers_keeps_the_dropped_scores_aside(cfg_for, tmp_path, caplog):
    """Adding a scorer to a folder by naming only it must not lose the finished scores of the others silently."""
    out = tmp_path / "run"
    run_evaluation(cfg_for("scorer=[]", "+scorers.count.model=test-counting", "plots.enabled=false"))
    assert "count" in _scores(out / "scores.jsonl")[0]["scores"]
    with caplog.at_level("WARNING"):
        run_evaluation(cfg_for("scorer=[length]", "plots.enabled=false"))
    assert "count" not in _scores(out / "scores.jsonl")[0]["scores"]
    assert "count" in _scores(out / "scores.previous.jsonl")[0]["scores"]
    assert (out / "scores.previous.meta.json").is_file()
    assert "finished scores of count, which this run does not name" in caplog.text
    # each later drop keeps its own copy beside the earlier ones (this one drops length, the next count again)
    run_evaluation(cfg_for("scorer=[]", "+scorers.count.model=test-counting", "plots.enabled=false"))
    run_evaluation(cfg_for("scorer=[length]", "plots.enabled=false"))
    assert set(_scores(out / "scores.previous2.jsonl")[0]["scores"]) == {"length"}
    assert set(_scores(out / "scores.previous3.jsonl")[0]["scores"]) == {"count"}
    assert "count" in _scores(out / "scores.previous.jsonl")[0]["scores"]


def test_bad_configs_give_clear_errors(cfg_for):
    with pytest.raises(EvaluationConfigError, match=r"scorer 'nope'.*no-such-scorer.*Registered scorers"):
        run_evaluation(cfg_for("+scorers.nope.model=no-such-scorer"))
    with pytest.raises(EvaluationConfigError, match=r"rating column\(s\) \['fluency'\] not found.*naturalness"):
        run_evaluation(cfg_for("ratings=[fluency]"))
    with pytest.raises(EvaluationConfigError, match=r"metric column\(s\) \['BLEU'\] not in dataset 'sample'"):
        run_evaluation(cfg_for("metric_columns=[BLEU]"))
    with pytest.raises(EvaluationConfigError, match="stats.protocols: unknown 'flat'"):
        run_evaluation(cfg_for("stats.protocols=[flat]"))
    with pytest.raises(EvaluationConfigError, match="dataset.name=.*neither a known dataset"):
        run_evaluation(cfg_for("dataset=file", "dataset.name=missing.jsonl"))
    with pytest.raises(EvaluationConfigError, match="nothing to evaluate"):
        run_evaluation(cfg_for("scorer=[]"))


def test_csv_file_dataset_and_one_tailed_bonferroni(cfg_for, tmp_path):
    path = tmp_path / "mini.csv"
    rng = np.random.default_rng(0)
    lines = ["id,system,dataset,output,ratings.fluency,metrics.m1"]
    for i in range(40):
        fl = float(rng.integers(1, 6))
        lines.append(f"r{i},S{i % 4},D,some output {i},{fl},{fl + rng.normal()}")
    path.write_text("\n".join(lines) + "\n")
    res = run_evaluation(cfg_for("dataset=file", f"dataset.name={path}", "dataset.item_key=null",
                                 "stats.tails=1", "stats.correction=bonferroni", "plots.enabled=false"))
    report = (tmp_path / "run" / "report.md").read_text()
    assert "one-tailed" in report and "Bonferroni-corrected" in report
    assert "no item field" in report
    c = res["results"].correlations.query("level == 'instance' and protocol == 'none' and subset == 'all' and method == 'pearson'")
    p_two = scipy.stats.pearsonr(*[np.array(v) for v in zip(*[(float(l.split(',')[5]), float(l.split(',')[4])) for l in lines[1:]])]).pvalue
    m1 = c[c.metric == "m1"].iloc[0]
    assert m1.p == pytest.approx(p_two / 2) and m1.p_adj == pytest.approx(min(1, 2 * p_two / 2))  # 2 metrics: m1, length


def test_evaluate_py_entry_point(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    out = tmp_path / "py"
    r = subprocess.run([sys.executable, "evaluate.py", f"hydra.run.dir={out}", *FAST, "plots.enabled=false",
                        "stats.methods=[pearson]"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (out / "scores.jsonl").is_file() and "python evaluate.py" in (out / "report.md").read_text()
    assert "report:" in r.stdout


def test_qe_evaluate_in_process(tmp_path, capsys):
    from qe.cli import main

    GlobalHydra.instance().clear()
    out = tmp_path / "cli"
    assert main(["evaluate", f"hydra.run.dir={out}", *FAST, "plots.enabled=false", "stats.methods=[pearson]"]) == 0
    GlobalHydra.instance().clear()
    report = (out / "report.md").read_text()
    assert report.count("\n") > 50 and "qe evaluate" in report
    assert len(_scores(out / "scores.jsonl")) == 120
    # a bad override: Hydra reports the error (naming the scorer and the registered ones) and exits non-zero
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", f"hydra.run.dir={tmp_path / 'bad'}", "+scorers.x.model=no-such-scorer"])
    GlobalHydra.instance().clear()
    assert exc.value.code != 0
    err = capsys.readouterr().err
    assert "no-such-scorer" in err and "Registered scorers" in err


@needs_data
def test_emnlp17_metric_columns_match_the_csv(cfg_for, tmp_path):
    import pandas as pd

    from qe.core.paths import resolve_data_dir

    res = run_evaluation(cfg_for("dataset=emnlp17", "scorer=[]", "metric_columns=[METEOR,TER]",
                                 "stats.bootstrap.n=0", "stats.permutation.n=0", "plots.enabled=false"))
    raw = pd.read_csv(resolve_data_dir(None) / "emnlp17" / "emnlp_data_medians.csv")
    c = res["results"].correlations.set_index(["level", "protocol", "subset", "rating", "metric", "method"])
    for ds in ("all", "SFHOT"):
        frame = raw if ds == "all" else raw[raw.dataset == ds]
        key = ("instance", "none", "all" if ds == "all" else f"dataset={ds}", "naturalness", "METEOR", "spearman")
        assert c.loc[key, "r"] == pytest.approx(scipy.stats.spearmanr(frame.METEOR, frame.naturalness).statistic)
    # system level pooled over datasets: dataset/system pairs (6 units in EMNLP17)
    sys_means = raw.groupby(["dataset", "system"])[["TER", "quality"]].mean()
    key = ("system", "system means", "all · all systems", "quality", "TER", "pearson")
    assert c.loc[key, "r"] == pytest.approx(scipy.stats.pearsonr(sys_means.TER, sys_means.quality).statistic)
    assert c.loc[key, "n"] == 6


def test_nan_scores_dropped_and_counted_and_components(tmp_path, tiny_corpus):
    from qe.data import load_dataset
    from qe.evaluation.runner import evaluate_records
    from qe.lm.model import LSTMLM
    from qe.lm.task import save_lm_export, unigram_logprobs
    from qe.core.tokenization import WordTokenizer

    tok = WordTokenizer.train(tiny_corpus, max_size=100)
    mcfg = dict(vocab_size=tok.vocab_size, embedding_dim=8, hidden_size=8, num_layers=1, dropout=0.0,
                tie_weights=True, pad_id=0)
    logp, _ = unigram_logprobs([np.array(tok.encode(s)) for s in tiny_corpus], tok.vocab_size)
    export = save_lm_export(tmp_path / "run7" / "export", LSTMLM(**mcfg), tok, logp, mcfg)
    res = evaluate_records(load_dataset("sample"), tmp_path / "out", plots=False, progress=False,
                           scorers={"nan": "test-nan", "lm": {"model": str(export), "components": True}},
                           models=[str(export)], ratings=["quality"],
                           stats={"bootstrap": {"n": 0}, "permutation": {"n": 0}, "williams": False,
                                  "protocols": ["none"], "methods": ["pearson"]})
    info = res["data"].info
    assert "run7/export" in info and {"lm.slor", "lm.ppl", "lm.length"} <= set(info)
    assert info["lm.ppl"].higher_is_better is False and info["lm.slor"].higher_is_better is True
    c = res["results"].correlations
    row = c.query("level == 'instance' and subset == 'all' and metric == 'nan'").iloc[0]
    assert row.n == 108 and row.n_dropped == 12
    assert "| nan | scorer | higher | 12 | quality: 12 |" in res["report"].read_text()


def test_scorer_group_files_compose_into_specs(cfg_for, tmp_path):
    from qe.core.config import to_dict
    from qe.evaluation.scoring import parse_scorer_specs

    cfg = cfg_for("scorer=[length,slor]", f"scorers.slor.model={tmp_path}/lm/export", "models=[length-free/x]")
    specs = {s.label: s for s in parse_scorer_specs(to_dict(cfg.scorers), to_dict(cfg.models))}
    assert set(specs) == {"length", "slor", "x"}
    assert specs["slor"].model.endswith("lm/export") and specs["slor"].options == {"score": "slor"}


def test_missing_field_names_scorer_label_dataset_and_record():
    """The runner's input check is qe.core.inputs.scorer_inputs, wrapped in EvaluationConfigError."""
    import qe
    from qe.data.record import Record
    from qe.evaluation.scoring import ScorerSpec, _inputs_for

    recs = [Record(id="a", output="x", refs=["y"]), Record(id="b", output="z")]
    spec = ScorerSpec(label="b4", model="bleu-4")
    with pytest.raises(EvaluationConfigError, match=r"scorer 'b4' \(bleu-4\): dataset 'toy': record 'b' has no 'refs'"):
        _inputs_for(qe.load("bleu-4"), spec, recs, "toy")
    assert _inputs_for(qe.load("bleu-4"), spec, recs[:1], "toy") == {"refs": [["y"]]}
    assert _inputs_for(qe.load("length"), spec, recs, "toy") == {}


def test_coverage_scores_of_other_matcher_code_are_not_its_own(monkeypatch):
    """The ``qe`` version is the same for two commits of a source checkout: the signature fingerprints the code that
    decides the verdicts, so a resume does not take an older matcher's scores as this one's (an EMNLP17 rerun into
    an existing folder reused them after three matcher changes)."""
    import qe.content.scorer as cs

    made = str(qe.load("coverage", lexicon="none").signature)
    assert f"code:{cs.code_digest()}|" in made
    monkeypatch.setattr(cs, "code_digest", lambda: "0123456789ab")
    now = qe.load("coverage", lexicon="none")
    assert str(now.signature_for(made)) != made and "code:0123456789ab|" in str(now.signature)
    assert now.identity() != made


def test_the_code_digest_reads_the_modules_that_decide_the_verdicts(monkeypatch):
    import qe.content.scorer as cs

    digest = cs.code_digest()
    assert len(digest) == 12 and all(c in "0123456789abcdef" for c in digest)
    cs.code_digest.cache_clear()
    try:
        monkeypatch.setattr(cs, "VERDICT_MODULES", cs.VERDICT_MODULES[:-1])  # another set of sources: another digest
        assert cs.code_digest() != digest
        cs.code_digest.cache_clear()
        monkeypatch.setattr(cs, "VERDICT_MODULES", ("qe.no_such_module_here",))
        assert cs.code_digest() == "?"
    finally:
        cs.code_digest.cache_clear()
