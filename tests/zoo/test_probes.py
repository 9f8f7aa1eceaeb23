"""Each kind is fingerprinted on in-domain probes: RatPred models trained for WebNLG (RDF-triple MRs) on the shipped
triple probe set, the other MR models on the E2E / dialogue-act set; a fingerprint records its probe set, old
fingerprints over another set stay comparable (the export at hand scores their set), and two fingerprints over
different sets with no export at hand are refused in one line, not a crash. Tiny RatPred exports, no training."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import qe
from qe.cli import main as qe_main
from qe.core.mr import detect, parse_acts
from qe.zoo import archive
from qe.zoo import fingerprint as fpm

REPO = Path(__file__).resolve().parents[2]
WEBNLG_TRAIN = {"protocol": {"mode": "transfer", "target_data": {"name": "webnlg", "split": "train"}}}


def test_triple_probe_set_is_rdf_triples_with_good_and_bad_outputs():
    ps = fpm.load_probes("mr_triples")
    assert fpm.MR_PROBE_SETS == {"triples": "mr_triples"}
    mrs = sorted({r["mr"] for r in ps.rows})
    assert len(mrs) == 12 and len(ps.rows) == 36 and len({r["id"] for r in ps.rows}) == 36
    for mr in mrs:
        assert detect(mr) == "triples" and all(act == "<triple>" for act, _ in parse_acts(mr))
    # each MR: a complete realisation, an incomplete or wrong one, a garbled or hallucinating one
    for mr in mrs:
        rows = [r for r in ps.rows if r["mr"] == mr]
        assert [r["id"][-1] for r in rows] == ["a", "b", "c"] and len({r["output"] for r in rows}) == 3
        assert all(len(r["refs"]) == 1 and r["refs"][0] not in {x["output"] for x in rows} for r in rows)


@pytest.mark.parametrize("manifest, fmt", [
    ({"config": {"train": WEBNLG_TRAIN}, "data": {"name": "emnlp17_refs"}}, "triples"),  # the target decides
    ({"config": {"train": {"protocol": {"target_data": {"name": "e2e", "split": "dev"}}}}}, None),
    ({"data": {"name": "webnlg2020"}}, "triples"),
    ({"config": {"train": {"data": {"dataset": "webnlg2020"}}}}, "triples"),
    ({"data": {"name": "emnlp17"}}, None),
    ({}, None),
    (None, None),
])
def test_trained_mr_format_reads_the_manifest(manifest, fmt):
    assert fpm.trained_mr_format(manifest) == fmt
    assert fpm.probe_set_for("qe_gru", manifest=manifest) == ("mr_triples" if fmt else "mr_outputs")
    assert fpm.probe_set_for("slor", manifest=manifest) == "sentences"  # only MR sets are swapped


@pytest.mark.parametrize("name, fmt", [("ratpred-webnlg", "triples"), ("ratpred-webnlg-cross", "triples"),
                                       ("ratpred-e2e", None), ("ratpred-emnlp17-s6", None)])
def test_the_zoo_recipes_record_what_decides_the_probe_set(name, fmt, tmp_path):
    """What a recipe's export records (config.train: the resolved training config) picks the probe set."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from qe.training import plain_config
    from qe.zoo import build as zoo

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=zoo.recipe_overrides(zoo.RECIPES[name], tmp_path))
    manifest = {"config": {"train": plain_config(cfg)}, "data": {"name": str(cfg.data.dataset)}}
    assert fpm.trained_mr_format(manifest) == fmt


def _ratpred(dest: Path, *, webnlg: bool, seed: int = 0) -> Path:
    """A tiny untrained RatPred export over the words of both MR probe sets; ``webnlg``: its manifest says it was
    trained for WebNLG (as ratpred-webnlg's does)."""
    import torch

    from qe.ratpred.format import save_export
    from qe.ratpred.model import RatPredNet, Vocab

    words = sorted({w for s in ("mr_outputs", "mr_triples") for r in fpm.load_probes(s).rows
                    for w in r["output"].lower().split()})
    vocab = Vocab(words + ["X-e1", "X-e2", "X-e3", "<triple>", "X-name", "inform", "name", "birth", "place"])
    torch.manual_seed(seed)
    model = dict(vocab_size=len(vocab), embedding_dim=8, hidden_size=8, tanh_layers=1, dropout=0.0)
    config = {"delex": True, "setup": "S6"}
    if webnlg:
        config["train"] = WEBNLG_TRAIN
    return save_export(dest, RatPredNet(**model), vocab, model, {"round_to": 0.5, "clip_lo": 1.0, "clip_hi": 6.0},
                       config=config, data={"name": "emnlp17_refs", "records": 40}, metrics={"val/corr": 0.3})


def _fp(export: Path) -> dict:
    return json.loads((export / "qe_export.json").read_text())["fingerprint"]


def test_a_webnlg_ratpred_export_is_fingerprinted_on_triples(tmp_path):
    web, e2e = _ratpred(tmp_path / "web", webnlg=True), _ratpred(tmp_path / "e2e", webnlg=False)
    fw, fe = _fp(web), _fp(e2e)
    assert fw["probe_set"] == "mr_triples" and fw["n"] == 36 and fw["probe_sha256"] == fpm.load_probes("mr_triples").sha256
    assert fe["probe_set"] == "mr_outputs" and fe["n"] == 40
    assert "`mr_triples`" in (web / "README.md").read_text()
    # the scores are the scorer's on the triple probes (the model reads the triple MRs)
    ps = fpm.load_probes("mr_triples")
    got = qe.load(web, rounded=False).score(ps.outputs, mrs=ps.column("mr"), progress=False)
    assert fw["scores"] == pytest.approx(got, abs=1e-6)


def test_an_old_fingerprint_over_another_probe_set_still_compares(tmp_path, capsys):
    """A fingerprint recorded before the triple set existed (ratpred-webnlg's published one is over mr_outputs):
    the export at hand scores mr_outputs to compare with it; two fingerprint files over different sets are refused
    in one line."""
    web = _ratpred(tmp_path / "web", webnlg=True)
    old = fpm.compute(web, probe_set="mr_outputs")  # what an export written before the change recorded
    assert old["probe_set"] == "mr_outputs" and old["n"] == 40
    old_file = tmp_path / "old.json"
    old_file.write_text(json.dumps({"kind": "qe_gru", "checksum": "0" * 64, "fingerprint": old}))
    ident = fpm.identity_of_export(web)
    assert ident.fingerprint["probe_set"] == "mr_triples"
    v = fpm.compare(fpm.identity_of_json(old_file), ident)
    assert v.status == "equivalent" and "(mr_outputs)" in v.summary and ident.fingerprint["probe_set"] == "mr_outputs"
    v = fpm.compare(fpm.identity_of_export(web), fpm.identity_of_json(old_file))  # the other way round too
    assert v.status == "equivalent"
    # CLI: export vs old fingerprint file, and two fingerprint files over different sets
    assert qe_main(["zoo", "compare", str(web), str(old_file)]) == 0
    assert "equivalent" in capsys.readouterr().out
    new_file = tmp_path / "new.json"
    assert qe_main(["zoo", "fingerprint", str(web), "-o", str(new_file)]) == 0
    assert "probes of 'mr_triples'" in capsys.readouterr().out
    with pytest.raises(fpm.FingerprintError, match=r"different probe sets \('mr_outputs' \w+ vs 'mr_triples' \w+\) "
                                                   r"and no export at hand"):
        fpm.compare(fpm.identity_of_json(old_file), fpm.identity_of_json(new_file))
    assert qe_main(["zoo", "compare", str(old_file), str(new_file)]) == 2
    err = capsys.readouterr().err.strip()
    assert "different probe sets" in err and "\n" not in err and "Traceback" not in err


def test_an_archive_with_an_old_fingerprint_installs_checked_on_its_set(tmp_path, capsys):
    """An archive packed with a fingerprint over mr_outputs (before the triple set) is checked on mr_outputs."""
    web = _ratpred(tmp_path / "A" / "web", webnlg=True)
    man = json.loads((web / "qe_export.json").read_text())
    man["fingerprint"] = fpm.compute(web, probe_set="mr_outputs")
    (web / "qe_export.json").write_text(json.dumps(man))
    arc = archive.pack(web, tmp_path / "dist")
    assert archive.read_meta(arc)["fingerprint"]["probe_set"] == "mr_outputs"
    assert qe_main(["zoo", "--models-dir", str(tmp_path / "B"), "install", str(arc)]) == 0
    out = capsys.readouterr().out
    assert "probe scores equivalent to its fingerprint" in out and "(mr_outputs)" in out
