"""Diagnostic: how much sentence-order information do an encoder's *frozen* features carry?

Why the SOP head of ``task=sop`` pools segment means instead of [CLS]: a logistic-regression probe on frozen
features of segment pairs (original order vs swapped, both orders of one random split per document) tells
which representation a fresh head can start from. Features of ``[CLS] A [SEP] B [SEP]`` (cut to
``--max-length`` word pieces with the scorer's boundary rule):

* ``cls``        — the [CLS] state,
* ``seg-means``  — mean state of A's tokens ⊕ mean state of B's tokens (what ``model.pooling=segments`` uses),
* ``both``       — the two together.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/sop_feature_probe.py --encoder minilm --train-docs 2000

Training documents: Brown 5-sentence windows + WikiText-2 valid paragraphs (seeded shuffle); test: the first
``--test-docs`` WikiText-2 test paragraphs. Needs ``../shared/data`` (or ``--data-dir``).
"""
from __future__ import annotations

import argparse
import random
import time

import numpy as np
import torch


def features(model, tok, pairs, max_length: int, batch: int = 64) -> dict[str, np.ndarray]:
    from qe.gruen.hf import SpecialTokens, keep_boundary

    sp = SpecialTokens(tok)
    pad = tok.pad_token_id or 0
    cls, seg = [], []
    with torch.inference_mode():
        for i in range(0, len(pairs), batch):
            chunk = pairs[i : i + batch]
            ea = tok([a for a, _ in chunk], add_special_tokens=False)["input_ids"]
            eb = tok([b for _, b in chunk], add_special_tokens=False)["input_ids"]
            rows = [sp.pair(*keep_boundary(a, b, max_length - sp.n_pair)[:2]) for a, b in zip(ea, eb)]
            L = max(len(r[0]) for r in rows)
            ids = torch.full((len(rows), L), pad)
            tt = torch.zeros((len(rows), L), dtype=torch.long)
            att = torch.zeros((len(rows), L), dtype=torch.long)
            for r, (x, t) in enumerate(rows):
                ids[r, : len(x)], tt[r, : len(x)], att[r, : len(x)] = torch.tensor(x), torch.tensor(t), 1
            h = model(input_ids=ids, attention_mask=att, token_type_ids=tt).last_hidden_state
            m = att.unsqueeze(-1).float()
            second = (tt != 0).unsqueeze(-1).float() * m
            first = m - second
            cls.append(h[:, 0].numpy())
            seg.append(torch.cat([(h * first).sum(1) / first.sum(1), (h * second).sum(1) / second.sum(1)], 1).numpy())
    c, s = np.concatenate(cls), np.concatenate(seg)
    return {"cls": c, "seg-means": s, "both": np.concatenate([c, s], 1)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--encoder", default="minilm")
    ap.add_argument("--train-docs", type=int, default=2000)
    ap.add_argument("--test-docs", type=int, default=300)
    ap.add_argument("--max-length", type=int, default=96)
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args(argv)

    from sklearn.linear_model import LogisticRegression
    from transformers import AutoModel, AutoTokenizer

    from qe.gruen.data import load_documents, sop_pairs
    from qe.offline import encoder_path

    docs = load_documents([{"name": "brown", "window": 5}, {"name": "wikitext2", "split": "valid"}], args.data_dir)
    random.Random(0).shuffle(docs)
    test_docs = load_documents([{"name": "wikitext2", "split": "test"}], args.data_dir)[: args.test_docs]
    (tp, tl), (vp, vl) = sop_pairs(docs[: args.train_docs], 0), sop_pairs(test_docs, 1)
    tok = AutoTokenizer.from_pretrained(encoder_path(args.encoder))
    model = AutoModel.from_pretrained(encoder_path(args.encoder)).eval()
    t0 = time.time()
    X, V = features(model, tok, tp, args.max_length), features(model, tok, vp, args.max_length)
    print(f"{len(tp)} training / {len(vp)} test pairs, features in {time.time() - t0:.0f} s ({args.encoder})")
    print("| features | train acc | test acc |\n|---|---|---|")
    for k in X:
        clf = LogisticRegression(max_iter=2000).fit(X[k], tl)
        print(f"| {k} | {clf.score(X[k], tl):.3f} | {clf.score(V[k], vl):.3f} |")


if __name__ == "__main__":
    main()
