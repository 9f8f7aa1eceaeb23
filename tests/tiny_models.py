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
    from transformers import BertTokenizer

    d.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(set(WORDS)) + list("abcdefghijklmnopqrstuvwxyz")
    vocab += ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]
    vocab = list(dict.fromkeys(vocab))  # one line per token: ids are line numbers
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n")
    return BertTokenizer.from_pretrained(str(d), do_lower_case=True)


def _tiny_config(tok, **kw):
    from transformers import BertConfig

    base = dict(vocab_size=len(tok.get_vocab()), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=37, max_position_embeddings=512, type_vocab_size=2)
    base.update(kw)
    return BertConfig(**base)


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
