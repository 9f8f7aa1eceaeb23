"""Tiny random BERT models for tests: built from a config and saved to a temporary folder (offline, about a second).
Used by the GRUEN tests and by the config tests that compose GRUEN tasks."""
from __future__ import annotations

from pathlib import Path

import torch

from qe.gruen.format import save_hf_export

WORDS = ("the a an monkey took bunch of bananas on desk it red large is was and cat dog sat mat hotel restaurant "
         "food cheap near river first then finally later meanwhile , . boy rescued firefighters police drain "
         "cover accident schoolboy free leg hole italian serves good bad quiet park").split()


def _tiny_tokenizer(d: Path):
    from qe.core.offline import tiny_bert_tokenizer

    return tiny_bert_tokenizer(d, sorted(set(WORDS)))


def _tiny_config(tok, **kw):
    from qe.core.offline import tiny_bert_config

    return tiny_bert_config(len(tok.get_vocab()), **kw)


def make_tiny(root: Path) -> dict:
    """Tiny random BERT models saved with save_pretrained into ``root`` (about a second, offline): an MLM folder
    (``mlm_dir``, also usable as ``model.encoder`` of task=cola|mlm|sop), a bare encoder (``encoder``), and the three
    component exports task=gruen_tune needs (``cola_export``, ``mlm_export``, ``sop_export``)."""
    from transformers import BertForMaskedLM, BertForSequenceClassification, BertModel

    torch.manual_seed(0)
    tok = _tiny_tokenizer(root / "tok")
    out = {"tok": tok, "root": root}
    mlm = BertForMaskedLM(_tiny_config(tok)).eval()
    mlm.save_pretrained(root / "mlm")
    tok.save_pretrained(root / "mlm")
    out["mlm_dir"] = root / "mlm"
    out["mlm_export"] = save_hf_export(root / "mlm_export", mlm, tok, "mlm", {"encoder": "tiny"}, {}, {})
    cls = BertForSequenceClassification(_tiny_config(tok, num_labels=2)).eval()
    out["cola_export"] = save_hf_export(root / "cola_export", cls, tok, "acceptability", {"positive_label": 1}, {}, {})
    sop = BertForSequenceClassification(_tiny_config(tok, num_labels=2)).eval()
    out["sop_export"] = save_hf_export(root / "sop_export", sop, tok, "sop", {}, {}, {})
    enc = BertModel(_tiny_config(tok))
    enc.save_pretrained(root / "encoder")
    tok.save_pretrained(root / "encoder")
    out["encoder"] = root / "encoder"
    return out
