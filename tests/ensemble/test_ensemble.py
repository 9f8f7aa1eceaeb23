"""Ensemble exports (qe/ensemble): train two tiny RatPred runs, combine them with task=ensemble, reload, and check
that the exported scorer, the task's cross-validated figures and `experiments.ratpred combine` follow one rule."""
import json
import shutil

import numpy as np
import pytest

import qe
from qe.errors import ExportError, RecordError
from tiny_ratpred import _compose_ratpred, _records
from tests.content.test_aligner import tiny_export  # noqa: F401 - the module-scoped fixture


def _compose_ensemble(tmp_path, *overrides):
    import pathlib

    from hydra import compose, initialize_config_dir
    from omegaconf import open_dict

    conf = pathlib.Path(__file__).resolve().parents[2] / "conf"
    with initialize_config_dir(str(conf), version_base="1.3"):
        cfg = compose("train", overrides=["task=ensemble", "logger=none", *overrides])
    with open_dict(cfg):
        cfg.paths.output_dir = str(tmp_path / "ens_run")
        cfg.export_dir = str(tmp_path / "ens")
    return cfg


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two tiny RatPred runs (S2, seed 1, fold 0, GRU sizes 8 and 12): export + cross-validated predictions."""
    from qe.training import run_training

    out = {}
    for name, seed, size in (("a", 1, 8), ("b", 1, 12)):
        d = tmp_path_factory.mktemp(name)
        cfg = _compose_ratpred(d, f"protocol.seeds=[{seed}]", "protocol.folds=[0]", "protocol.passes_orig=2",
                               f"model.hidden_size={size}", "logger=none")
        run_training(cfg)
        out[name] = {"export": d / "export", "run": d / "run"}
    return out


def test_ensemble_task_export_scorer_and_cv_agree(two_runs, tmp_path):
    from qe.core.predictions import round_clip
    from qe.training import run_training

    a, b = two_runs["a"], two_runs["b"]
    cfg = _compose_ensemble(tmp_path, f"+ensemble.members.a={a['export']}", f"+ensemble.members.b={b['export']}",
                            f"+ensemble.cv_runs.a={a['run']}", f"+ensemble.cv_runs.b={b['run']}")
    metrics = run_training(cfg)
    exp = tmp_path / "ens"
    man = json.loads((exp / "qe_export.json").read_text())
    assert man["kind"] == "ensemble" and metrics["export_path"] == str(exp.resolve())
    spec = json.loads((exp / "ensemble.json").read_text())
    assert [m["name"] for m in spec["members"]] == ["a", "b"] and spec["predict"] == {
        "round_to": 0.5, "clip_lo": 1.0, "clip_hi": 6.0}
    assert all(m["options"] == {"rounded": False} for m in spec["members"])

    # the scorer: mean of the members' raw outputs, rounded + clipped once; raw with rounded=False
    recs = {r.id: r for r in _records()}
    rows_a = [json.loads(x) for x in (a["run"] / "predictions.jsonl").read_text().splitlines()]
    ids = [r["id"] for r in rows_a]
    outs, mrs = [recs[i].output for i in ids], [recs[i].mr for i in ids]
    ens = qe.load(exp)
    assert ens.requires_mrs and ens.accepts_ids
    ra = qe.load(a["export"], rounded=False).score(outs, mrs=mrs, progress=False)
    rb = qe.load(b["export"], rounded=False).score(outs, mrs=mrs, progress=False)
    want_raw = (np.asarray(ra) + np.asarray(rb)) / 2
    assert np.allclose(qe.load(exp, rounded=False).score(outs, mrs=mrs, progress=False), want_raw)
    got = ens.score(outs, mrs=mrs, progress=False)
    assert np.allclose(got, round_clip(want_raw, 0.5, 1.0, 6.0))
    comps = ens.score_components(outs, mrs=mrs, progress=False)
    assert set(comps) == {"a", "b", "ensemble"} and np.allclose(comps["a"], ra) and np.allclose(comps["ensemble"], got)
    assert ens.signature.startswith("Ensemble(") and ens.signature.count("RatPred|qe_gru:") == 2

    # the task's cross-validated figure is the exported rule applied to the runs' predictions: fold 0's test
    # predictions come from the very models the export holds, so scoring those outputs gives that figure
    from qe.core.predictions import correlations

    res = json.loads((tmp_path / "ens_run" / "results.json").read_text())
    test = res["cv"]["seed1"]["test"]
    assert test["n"] == len(ids) and set(res["cv"]["seed1"]) == {"dev", "test"}
    want = correlations(got, [r["gold"] for r in rows_a])
    assert test["pearson"] == pytest.approx(want["pearson"], abs=1e-6)
    assert man["metrics"]["cv/seed1/test/pearson"] == pytest.approx(test["pearson"])
    assert res["cv"]["members"] == res["cv"]["seed1"]  # one seed each: the members' figure is seed 1's
    # experiments.ratpred export-check: the export reproduces its runs' fold-0 test predictions, combined
    from experiments.ratpred import export_check

    out = export_check([str(exp), str(a["run"]), str(b["run"]), f"--dataset={a['run'].parent / 'rated.jsonl'}"])
    assert f"combined: {len(ids)} / {len(ids)}" in out


def test_ensemble_cv_figures_match_combine(tmp_path):
    """cv_figures (what an ensemble export records) == the `combine` row of the same two runs."""
    from experiments import ratpred as report
    from qe.ensemble.task import cv_figures

    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        d = tmp_path / name
        d.mkdir()
        for fname in ("dev_predictions.jsonl", "predictions.jsonl"):
            rows = [{"seed": 1, "fold": i % 3, "id": f"{fname[0]}{i}", "raw": float(rng.uniform(1, 6)),
                     "gold": float(i % 6 + 1)} for i in range(30)]
            (d / fname).write_text("".join(json.dumps(r) + "\n" for r in rows))
    cv = cv_figures({"a": str(tmp_path / "a"), "b": str(tmp_path / "b")}, {"a": 0.5, "b": 0.5},
                    {"round_to": 0.5, "clip_lo": 1.0, "clip_hi": 6.0})
    out = report.combine_table([f"a={tmp_path / 'a'}", f"b={tmp_path / 'b'}"])
    row = next(line for line in out.splitlines() if line.startswith("| a + b"))
    cells = row.split(" | ")
    assert cells[3] == f"{cv['seed1']['dev']['pearson']:.3f}" and cells[4] == f"{cv['seed1']['test']['pearson']:.3f}"
    assert cv["seed1"]["test"]["n"] == 30
    # members trained with different seeds (c = b's predictions as seed 2): no common seed, the members' figure
    # combines each run's own seed - here exactly a + b of seed 1
    (tmp_path / "c").mkdir()
    for fname in ("dev_predictions.jsonl", "predictions.jsonl"):
        rows = [json.loads(x) | {"seed": 2} for x in (tmp_path / "b" / fname).read_text().splitlines()]
        (tmp_path / "c" / fname).write_text("".join(json.dumps(r) + "\n" for r in rows))
    cv_ac = cv_figures({"a": str(tmp_path / "a"), "c": str(tmp_path / "c")}, {"a": 0.5, "c": 0.5},
                       {"round_to": 0.5, "clip_lo": 1.0, "clip_hi": 6.0})
    assert set(cv_ac) == {"members"} and cv_ac["members"] == cv["seed1"] == cv["members"]
    # weights move the figure (b alone == weight 0 for a)
    only_b = cv_figures({"a": str(tmp_path / "a"), "b": str(tmp_path / "b")}, {"a": 0.0, "b": 1.0}, None)
    rows_b = [json.loads(x) for x in (tmp_path / "b" / "predictions.jsonl").read_text().splitlines()]
    gold = [r["gold"] for r in sorted(rows_b, key=lambda r: (r["fold"], r["id"]))]
    raw = [r["raw"] for r in sorted(rows_b, key=lambda r: (r["fold"], r["id"]))]
    assert only_b["seed1"]["test"]["pearson"] == pytest.approx(np.corrcoef(raw, gold)[0, 1])


def test_ensemble_export_is_self_contained_and_checked(two_runs, tmp_path):
    from qe.ensemble.format import save_ensemble_export

    a, b = two_runs["a"], two_runs["b"]
    exp = save_ensemble_export(tmp_path / "e", {"a": a["export"], "b": b["export"]}, weights={"a": 3, "b": 1},
                               predict=None)
    moved = tmp_path / "elsewhere" / "e2"
    moved.parent.mkdir()
    shutil.move(str(exp), moved)
    recs = _records()[:6]
    outs, mrs = [r.output for r in recs], [r.mr for r in recs]
    ra = np.asarray(qe.load(a["export"]).score(outs, mrs=mrs, progress=False))
    rb = np.asarray(qe.load(b["export"]).score(outs, mrs=mrs, progress=False))
    # predict=None and no options: the members score as they load by default (rounded), the mean is weighted 3:1
    assert np.allclose(qe.load(moved).score(outs, mrs=mrs, progress=False), 0.75 * ra + 0.25 * rb)
    # qe score --components: the record's score is the ensemble's, beside every member's
    from qe.cli import main as qe_main
    from qe.data.record import save_records

    save_records(recs, tmp_path / "in.jsonl")
    assert qe_main(["score", "-m", str(moved), "-i", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"),
                    "--components", "-q"]) == 0
    rows = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [r.id for r in recs]
    assert all(r["score"] == r["components"]["ensemble"] for r in rows) and set(rows[0]["components"]) == {"a", "b", "ensemble"}
    assert np.allclose([r["score"] for r in rows], 0.75 * ra + 0.25 * rb)
    # a bad MR names the record through the member
    with pytest.raises(RecordError, match="rec-x"):
        qe.load(moved).score(["a", "b"], mrs=[mrs[0], "broken"], ids=["rec-0", "rec-x"], progress=False)
    # a member's files changed: refused, naming the file
    (moved / "members" / "b" / "vocab.json").write_text("{}")
    with pytest.raises(ExportError, match="vocab.json"):
        qe.load(moved)


def test_ensemble_refuses_bad_specs(two_runs, tmp_path, tiny_lm_export):
    from qe.ensemble.format import check_weights, save_ensemble_export
    from qe.training import run_training

    a, b = two_runs["a"], two_runs["b"]
    with pytest.raises(ValueError, match="two or more members"):
        save_ensemble_export(tmp_path / "x", {"a": a["export"]})
    with pytest.raises(ValueError, match="unknown member.*c"):
        check_weights(["a", "b"], {"a": 1, "b": 1, "c": 1})
    with pytest.raises(ValueError, match="no weight for b"):
        check_weights(["a", "b"], {"a": 1})
    with pytest.raises(ValueError, match=">= 0"):
        check_weights(["a", "b"], {"a": -1, "b": 1})
    with pytest.raises(ValueError, match="sum to 0"):
        check_weights(["a", "b"], {"a": 0, "b": 0})
    assert check_weights(["a", "b"], None) == {"a": 0.5, "b": 0.5}
    cfg = _compose_ensemble(tmp_path, f"+ensemble.members.a={a['export']}", f"+ensemble.members.lm={tiny_lm_export}")
    with pytest.raises(ValueError, match="different kinds"):
        run_training(cfg)
    cfg = _compose_ensemble(tmp_path, f"+ensemble.members.a={a['export']}", f"+ensemble.members.b={tmp_path}/nope")
    with pytest.raises(FileNotFoundError, match="nope"):
        run_training(cfg)
    cfg = _compose_ensemble(tmp_path, f"+ensemble.members.a={a['export']}", f"+ensemble.members.b={b['export']}",
                            f"+ensemble.cv_runs.a={a['run']}")
    with pytest.raises(ValueError, match="cv_runs names"):
        run_training(cfg)


def test_scaled_ensemble_of_a_content_aligner_and_ratpred(two_runs, tiny_export, tmp_path):  # noqa: F811
    """ensemble.scales=auto: coverage (a content-aligner export, [0, 1]) and RatPred (raw, its clip range [1, 6]) are
    mapped to [0, 1] and averaged, not rounded; explicit scales are checked; a kind without a range is refused."""
    from qe.ensemble.format import read_spec
    from qe.training import run_training

    a = two_runs["a"]
    recs = _records()[:12]
    outs, mrs = [r.output for r in recs], [r.mr for r in recs]
    outs[3] = "a completely unrelated sentence"  # an output that realises none of its MR's facts
    cfg = _compose_ensemble(tmp_path, f"+ensemble.members.content={tiny_export}", f"+ensemble.members.rp={a['export']}",
                            "ensemble.scales=auto", "+ensemble.weights.content=3", "+ensemble.weights.rp=1")
    run_training(cfg)
    exp = tmp_path / "ens"
    spec = read_spec(exp)
    rows = {r["name"]: r for r in spec["members"]}
    assert rows["content"]["scale"] == [0.0, 1.0] and rows["rp"]["scale"] == [1.0, 6.0] and spec["predict"] is None
    assert rows["rp"]["options"] == {"rounded": False} and rows["content"]["options"] == {}
    cov = np.asarray(qe.load(tiny_export).score(outs, mrs=mrs, progress=False))
    raw = np.asarray(qe.load(a["export"], rounded=False).score(outs, mrs=mrs, progress=False))
    assert cov.min() < cov.max()  # the unrelated output scores lower: the test sees the content member move
    ens = qe.load(exp)
    got = np.asarray(ens.score(outs, mrs=mrs, progress=False))
    assert np.allclose(got, 0.75 * cov + 0.25 * (raw - 1.0) / 5.0)
    comps = ens.score_components(outs, mrs=mrs, progress=False)
    assert np.allclose(comps["rp"], (raw - 1.0) / 5.0) and np.allclose(comps["content"], cov)
    assert "content*0.75[0,1]" in ens.signature and "rp*0.25[1,6]" in ens.signature

    # explicit scales; a missing one, a bad one, and a kind that declares no range are refused
    cfg = _compose_ensemble(tmp_path, f"+ensemble.members.content={tiny_export}", f"+ensemble.members.rp={a['export']}",
                            "ensemble.scales={content: [0, 1], rp: [0, 10]}")
    run_training(cfg)
    assert np.allclose(qe.load(exp).score(outs, mrs=mrs, progress=False), 0.5 * cov + 0.5 * raw / 10.0)
    # with scales RatPred is read raw whatever the rule; a rule given here rounds the mean, none does not
    from qe.core.predictions import round_clip

    for predict, want in (("none", 0.5 * cov + 0.5 * (raw - 1.0) / 5.0),
                          ("{round_to: 0.25, clip_lo: 0, clip_hi: 1}",
                           round_clip(0.5 * cov + 0.5 * (raw - 1.0) / 5.0, 0.25, 0.0, 1.0))):
        cfg = _compose_ensemble(tmp_path, f"+ensemble.members.content={tiny_export}",
                                f"+ensemble.members.rp={a['export']}", "ensemble.scales=auto", f"ensemble.predict={predict}")
        run_training(cfg)
        assert read_spec(exp)["members"][1]["options"] == {"rounded": False}
        assert np.allclose(qe.load(exp).score(outs, mrs=mrs, progress=False), want), predict
    for bad, match in (("{content: [0, 1]}", "every member"), ("{content: [1, 1], rp: [1, 6]}", "lo < hi"),
                       ("{content: [0, x], rp: [1, 6]}", "not \\[lo, hi\\]"), ("maybe", "auto, or")):
        cfg = _compose_ensemble(tmp_path, f"+ensemble.members.content={tiny_export}",
                                f"+ensemble.members.rp={a['export']}", f"ensemble.scales={bad}")
        with pytest.raises(ValueError, match=match):
            run_training(cfg)
    cfg = _compose_ensemble(tmp_path, f"+ensemble.members.content={tiny_export}", f"+ensemble.members.rp={a['export']}",
                            "ensemble.scales=auto", f"+ensemble.cv_runs.content={a['run']}",
                            f"+ensemble.cv_runs.rp={a['run']}")
    with pytest.raises(ValueError, match="does not combine"):
        run_training(cfg)
    # an export whose member rows disagree on having a scale is refused when loaded
    spec_path = exp / "ensemble.json"
    doc = json.loads(spec_path.read_text())
    del doc["members"][0]["scale"]
    spec_path.write_text(json.dumps(doc))
    with pytest.raises(ExportError, match="all or none"):
        read_spec(exp)


def test_scales_auto_refuses_a_member_without_a_declared_range(two_runs, tiny_lm_export, tmp_path):
    from qe.training import run_training

    cfg = _compose_ensemble(tmp_path, f"+ensemble.members.a={two_runs['a']['export']}",
                            f"+ensemble.members.lm={tiny_lm_export}", "ensemble.scales=auto")
    with pytest.raises(ValueError, match="member lm \\(kind slor\\) declares no score range"):
        run_training(cfg)


def test_scales_auto_reads_a_score_range_any_export_declares(two_runs, tiny_lm_export, tmp_path):
    """An export of any kind may declare ``score_range`` in its manifest; ``scales=auto`` then uses it (a bad one is
    refused naming the member)."""
    from pathlib import Path

    from qe.core.export import MANIFEST
    from qe.ensemble.format import read_spec
    from qe.ensemble.task import declared_range
    from qe.training import run_training

    lm = tmp_path / "lm_declared"
    shutil.copytree(tiny_lm_export, lm)
    man = json.loads((lm / MANIFEST).read_text())
    assert declared_range("a", json.loads((Path(two_runs["a"]["export"]) / MANIFEST).read_text())) == [1.0, 6.0]
    man["score_range"] = [-20, 0]
    (lm / MANIFEST).write_text(json.dumps(man))
    cfg = _compose_ensemble(tmp_path, f"+ensemble.members.a={two_runs['a']['export']}",
                            f"+ensemble.members.lm={lm}", "ensemble.scales=auto", f"export_dir={tmp_path / 'ens'}")
    run_training(cfg)
    spec = read_spec(tmp_path / "ens")
    assert {r["name"]: r["scale"] for r in spec["members"]} == {"a": [1.0, 6.0], "lm": [-20.0, 0.0]}
    with pytest.raises(ValueError, match=r"member lm \(kind slor\) declares score_range \[3, 3\]"):
        declared_range("lm", {**man, "score_range": [3, 3]})


def test_exports_declare_their_score_range_and_old_ones_still_scale(two_runs, tiny_export, tmp_path):  # noqa: F811
    """RatPred (clip range), content-aligner ([0, 1]) and scaled ensemble ([0, 1]) exports write ``score_range`` into
    their manifests, so a scaled ensemble can itself be a member with ``scales=auto``; an unscaled ensemble declares
    none; exports written before ``score_range`` existed get the same ranges from their kind and rule."""
    from qe.core.export import MANIFEST, read_manifest
    from qe.ensemble.format import output_range, read_spec
    from qe.ensemble.task import declared_range
    from qe.training import run_training

    rp, content = two_runs["a"]["export"], tiny_export
    assert read_manifest(rp)["score_range"] == [1.0, 6.0]
    assert read_manifest(content)["score_range"] == [0.0, 1.0]
    for path, want in ((rp, [1.0, 6.0]), (content, [0.0, 1.0])):  # an old export: no score_range, same range
        man = {k: v for k, v in read_manifest(path).items() if k != "score_range"}
        assert declared_range("m", man) == want
    scaled, plain, nested = (tmp_path / d for d in ("scaled", "plain", "nested"))  # each writes <dir>/ens
    cfg = _compose_ensemble(scaled, f"+ensemble.members.content={content}", f"+ensemble.members.rp={rp}",
                            "ensemble.scales=auto")
    run_training(cfg)
    assert read_manifest(scaled / "ens")["score_range"] == [0.0, 1.0]
    cfg = _compose_ensemble(plain, f"+ensemble.members.a={rp}", f"+ensemble.members.b={two_runs['b']['export']}",
                            "ensemble.predict=none")
    run_training(cfg)
    assert "score_range" not in read_manifest(plain / "ens")
    # the scaled ensemble as a member of another: its [0, 1] is read like any declared range
    cfg = _compose_ensemble(nested, f"+ensemble.members.pair={scaled / 'ens'}", f"+ensemble.members.rp={rp}",
                            "ensemble.scales=auto")
    run_training(cfg)
    rows = {r["name"]: r["scale"] for r in read_spec(nested / "ens")["members"]}
    assert rows == {"pair": [0.0, 1.0], "rp": [1.0, 6.0]}
    assert output_range({"round_to": 0.5, "clip_lo": 1, "clip_hi": 6}, True) == [1.0, 6.0]
    assert output_range(None, False) is None and output_range({"round_to": 0.5}, True) == [0.0, 1.0]
    assert read_manifest(nested / "ens")["score_range"] == [0.0, 1.0] and (nested / "ens" / MANIFEST).is_file()
