"""RatPred's cross-encoder (issue 27 part 4, ``model.encoder=cross``): one encoder over ``[CLS] MR [SEP] output [SEP]``
fine-tuned end to end inside the RatPred protocol. A tiny random-weight BERT built from a config (nothing downloaded)
trains a few steps, exports, reloads and scores in input order; bf16 autocast works on the CPU path; the zoo recipe
``ratpred-webnlg-cross`` composes (CPU and GPU schedules) and its pipeline runs on the tiny fixtures of
tests/ratpred/test_ratpred_triples.py without ever opening the WebNLG ratings."""
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from qe.ratpred.cross import PairTokens, fit_pair
from qe.ratpred.data import Instance
from test_ratpred_triples import (AARHUS, AARHUS_TEXT, BEAN, BEAN_JSON, BEAN_TEXT, _never_read_ratings,  # noqa: F401
                                  recipe_data)

REPO = Path(__file__).resolve().parents[2]
WORDS = ("alan bean was born in wheeler texas on march 15 1932 he a test pilot elliot see dallas aarhus airport serves "
         "the city of whose leader is jacob bundsgaard place serves thai food number has triple birth date occupation "
         "inform name served green man restaurant eattype , . < > - ( ) ' = 0 1 2 3 4 5 6 7 8 9")


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    """A 1-layer, 16-wide BERT with random weights and a small word-piece vocabulary, saved as a local model
    directory (what ``model.sentence_model=<dir>`` loads); 64 positions, so the truncation rule is exercised."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    dest = tmp_path_factory.mktemp("tiny_bert")
    chars = "abcdefghijklmnopqrstuvwxyz0123456789"
    vocab = list(dict.fromkeys(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(set(WORDS.split())), *chars,
                                *(f"##{c}" for c in chars)]))
    BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True,
                      model_max_length=64).save_pretrained(str(dest))
    conf = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=32, max_position_embeddings=64, type_vocab_size=2)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        BertModel(conf).save_pretrained(str(dest))
    return dest


# ------------------------------------------------------------------------------------------------ the pair input
def test_pair_ids_types_and_the_truncation_rule(tiny_bert, caplog):
    t = PairTokens(str(tiny_bert))
    assert t.max_len == 64 and t.n_special == 3 and t.budget == 61 and t.dim == 16
    ids, types = t(["inform name green man"], ["green man serves thai food ."])[0]
    toks = t.tokenizer.convert_ids_to_tokens(ids.tolist())
    assert toks == ["[CLS]", "inform", "name", "green", "man", "[SEP]", "green", "man", "serves", "thai", "food", ".",
                    "[SEP]"]
    assert types.tolist() == [0] * 6 + [1] * 7
    # the rule: within the window nothing is cut; the shorter side whole, the longer cut at its end; both long: halves
    a, b = list(range(40)), list(range(100, 110))
    assert fit_pair(a, b, 61) == (a, b[:10])
    assert fit_pair(a, b, 30) == (a[:20], b)
    assert fit_pair(b, a, 30) == (b, a[:20])
    assert fit_pair(a, a, 31) == (a[:15], a[:16])
    long_mr = " ".join(["birth date"] * 40)
    with caplog.at_level("WARNING"):
        ids, types = t([long_mr], ["alan bean was born ."])[0]
    assert len(ids) == 64 and types.tolist()[-6:] == [1] * 6  # the whole output kept, the MR cut
    assert t.truncated == 1 and "1 of 1 (MR, output) pairs exceed the 64-piece window" in caplog.text
    with pytest.raises(ValueError, match="exceeds the window"):
        PairTokens(str(tiny_bert), max_len=65)


# ------------------------------------------------------------------------------------ train, export, reload, score
def _instances():
    mrs = [BEAN_JSON, AARHUS, "inform(name='green man';eattype=restaurant)"]
    texts = [BEAN_TEXT, AARHUS_TEXT, "green man is a restaurant ."]
    out = []
    for k in range(24):
        mr, text = mrs[k % 3], texts[k % 3]
        bad = k % 2 == 1
        out.append(Instance(mr, text if not bad else "place serves thai food .", 2.0 if bad else 5.5,
                            "real", 0, f"r{k}"))
    return out


def _train(tiny_bert, tmp_path, precision="32-true", steps=3):
    from omegaconf import OmegaConf

    from qe.ratpred.task import train_one

    model_cfg = {"encoder": "cross", "sentence_model": str(tiny_bert), "tanh_layers": 1, "dropout": 0.1,
                 "lr": 1e-3, "sentence_lr": 1e-3, "batch_size": 8, "warmup_steps": 2}
    proto = {"passes_synth": 1, "passes_orig": 1, "delex": True}
    cfg = OmegaConf.create({"trainer": {"_target_": "lightning.pytorch.Trainer", "accelerator": "cpu", "devices": 1,
                                        "enable_progress_bar": False, "precision": precision,
                                        "limit_train_batches": steps},
                            "logger": None, "callbacks": None, "paths": {"output_dir": str(tmp_path)}})
    data = _instances()
    return train_one(data[:16], data[16:20], data[20:], model_cfg, proto, seed=1, cfg=cfg, run_dir=None)


def test_cross_encoder_trains_exports_reloads_and_scores_in_input_order(tiny_bert, tmp_path):
    import qe
    from qe.ratpred.task import predict

    module, vocab, info = _train(tiny_bert, tmp_path)
    assert module.net.cross and module.net.sent_model is not None and len(vocab) == 2  # no GRU vocabulary
    assert [s["stage"] for s in info["stages"]] == ["synth+all", "original"]
    assert all(len(s["history"]) == 1 for s in info["stages"])  # each stage scored the dev part once
    assert np.isfinite(info["best_dev_corr"])
    # the encoder was trained end to end: its weights moved from the pretrained (here random) ones
    from transformers import AutoModel

    start = AutoModel.from_pretrained(str(tiny_bert)).state_dict()
    tuned = module.net.sent_model.state_dict()
    assert any(not torch.equal(start[k], tuned[k].cpu()) for k in start if k in tuned)
    # predictions come back in the instances' order (length-sorted batches are put back)
    insts = _instances()[:7]
    raw = predict(module, vocab, insts, delex=False, rounded=False)
    one_by_one = np.array([predict(module, vocab, [i], delex=False, rounded=False)[0] for i in insts])
    np.testing.assert_allclose(raw, one_by_one, atol=1e-5)

    dest = module.export(tmp_path / "export", vocab=vocab, config={"delex": False, "setup": "test"})
    man = json.loads((dest / "qe_export.json").read_text())
    assert man["kind"] == "qe_gru" and man["config"]["model"]["encoder"] == "cross"
    assert man["config"]["model"]["finetune_sentence"] and man["config"]["model"]["cross_pool"] == "mean"
    assert (dest / "sentence_model" / "config.json").is_file() and (dest / "sentence_model" / "tokenizer.json").is_file()
    s = qe.load(str(dest), rounded=False)
    assert "enc:cross/" in s.signature
    outs = [i.output for i in insts]
    mrs = [i.mr for i in insts]
    got = s.score(outs, mrs=mrs, progress=False)
    np.testing.assert_allclose(got, raw, atol=1e-5)
    # input order, whatever the batching: reversed inputs give reversed scores, batches of one the same scores
    np.testing.assert_allclose(s.score(outs[::-1], mrs=mrs[::-1], progress=False), got[::-1], atol=1e-5)
    np.testing.assert_allclose(s.score(outs, mrs=mrs, batch_size=1, progress=False), got, atol=1e-5)
    # the export says the network reads lexical pairs: a delexicalising scorer would see other text
    assert man["config"]["delex"] is False
    # bf16 autocast on the CPU path: finite scores near float32 ones, named in the signature
    b = qe.load(str(dest), rounded=False, precision="bf16")
    assert "bf16" in b.signature
    got16 = b.score(outs, mrs=mrs, progress=False)
    assert np.all(np.isfinite(got16)) and np.max(np.abs(np.array(got16) - got)) < 0.25
    with pytest.raises(ValueError, match="precision='16'"):
        qe.load(str(dest), precision="16")
    # rounded by default, like every RatPred export
    r = qe.load(str(dest)).score(outs[:2], mrs=mrs[:2], progress=False)
    assert all(abs(x * 2 - round(x * 2)) < 1e-9 for x in r)


def test_cross_encoder_trains_under_bf16_autocast_on_cpu(tiny_bert, tmp_path):
    module, vocab, info = _train(tiny_bert, tmp_path, precision="bf16-mixed", steps=2)
    assert all(s["epochs_run"] >= 1 for s in info["stages"])
    assert all(p.dtype == torch.float32 for p in module.parameters())  # autocast, not bf16 weights


def test_cross_needs_its_pairs_and_a_known_pooling(tiny_bert):
    from qe.ratpred.model import RatPredNet

    with pytest.raises(ValueError, match="cross_pool='max'"):
        RatPredNet(2, encoder="cross", sent_dim=16, cross_pool="max")
    net = RatPredNet(2, encoder="cross", sent_dim=16, tanh_layers=0)
    assert net.finetune_sentence and not hasattr(net, "gru_mr")
    with pytest.raises(ValueError, match="no encoder model is attached"):
        net(torch.ones(1, 1, dtype=torch.long), torch.ones(1), torch.ones(1, 1, dtype=torch.long), torch.ones(1),
            pair=torch.ones(1, 3, dtype=torch.long), pair_type=torch.zeros(1, 3, dtype=torch.long),
            pair_len=torch.tensor([3]))


# --------------------------------------------------------------------------------------- the zoo recipe
def _compose(overrides):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose("train", overrides=overrides)


def test_recipe_composes_cpu_and_gpu_schedules():
    from qe.zoo import NAMES
    from qe.zoo import build as zoo

    r = zoo.RECIPES["ratpred-webnlg-cross"]
    assert r.status == "final" and r.gpu_overrides and "ratpred-webnlg-cross" in NAMES and r.threads == 1
    cpu = _compose(zoo.recipe_overrides(r, Path("/m")))
    gpu = _compose(zoo.recipe_overrides(r, Path("/m"), gpu=True))
    for cfg in (cpu, gpu):
        p = cfg.protocol
        # the training instances and dev selection of ratpred-webnlg
        assert p.mode == "transfer" and "target_refs" in p.sources and cfg.data.dataset == "emnlp17_refs"
        assert dict(p.target_data) == {"name": "webnlg", "split": "train"} and p.seeds == [1]
        assert cfg.model.encoder == "cross" and cfg.model.sentence_model == "minilm" and not cfg.model.cross_delex
    # the experiment repeats ratpred_webnlg's protocol: the two must not drift apart
    from omegaconf import OmegaConf

    base = _compose(["experiment=ratpred_webnlg"]).protocol
    own = _compose(["experiment=ratpred_webnlg_cross"]).protocol
    assert OmegaConf.to_container(own) == OmegaConf.to_container(base)
    assert cpu.trainer.accelerator == "cpu" and int(cpu.trainer.limit_train_batches) > 0
    assert gpu.trainer.accelerator == "gpu" and gpu.trainer.precision == "bf16-mixed"
    assert float(gpu.trainer.limit_train_batches) == 1.0  # whole passes on a GPU
    # the schedule the recipe's budget was computed from: stage-1 steps x the measured seconds per step
    steps = int(cpu.protocol.passes_synth) * int(cpu.trainer.limit_train_batches)
    assert 1000 <= steps <= 6000


def test_recipe_pipeline_trains_without_reading_webnlg_ratings(recipe_data, tiny_bert, tmp_path, monkeypatch):
    """ratpred-webnlg-cross's own overrides with the tiny BERT and tiny passes, end to end on the fixtures: EMNLP17
    ratings + WebNLG train references; human_en.jsonl is never opened; the export scores triple MRs."""
    from omegaconf import open_dict

    import qe
    from qe.training import run_training
    from qe.zoo import build as zoo

    _never_read_ratings(monkeypatch)
    tiny = {"protocol.passes_synth": "1", "protocol.passes_orig": "1", "protocol.max_errors": "2",
            "model.sentence_model": str(tiny_bert), "model.batch_size": "16", "model.warmup_steps": "2",
            "+trainer.limit_train_batches": "3", "paths.data_dir": str(recipe_data), "trainer": "cpu",
            "trainer.enable_progress_bar": "false", "protocol.threads": "1"}
    ov = [o for o in zoo.recipe_overrides(zoo.RECIPES["ratpred-webnlg-cross"], tmp_path)
          if o.split("=")[0].lstrip("+") not in {k.lstrip("+") for k in tiny}]
    cfg = _compose(ov + [f"{k}={v}" for k, v in tiny.items()])
    with open_dict(cfg):
        cfg.paths.output_dir = str(tmp_path / "run")
        cfg.export_dir = str(tmp_path / "export")
    run_training(cfg)
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    assert res["mode"] == "transfer" and "summary" not in res
    counts = res["runs"][0]["counts"]
    assert counts["ref:target_refs"] == 4 and counts["synth:target_refs"] == 8 and counts["synth:train_outputs"] > 0
    man = json.loads((tmp_path / "export" / "qe_export.json").read_text())
    assert man["config"]["model"]["encoder"] == "cross" and man["config"]["delex"] is False
    assert man["config"]["synth_delex"] is True
    s = qe.load(str(tmp_path / "export"))
    got = s.score(["Alan Bean was born in Dallas.", "Alan Bean was born in Wheeler, Texas."],
                  mrs=[json.dumps(BEAN[:1]), "Alan_Bean | birthPlace | Wheeler,_Texas"], progress=False)
    assert len(got) == 2 and all(1.0 <= g <= 6.0 for g in got)
