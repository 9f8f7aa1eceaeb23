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
    from qe.gruen.data import TextClassificationDataModule
    from qe.gruen.model import segment_means

    # the training collate of task=sop: pairs cut with the scorer's boundary rule
    dm = TextClassificationDataModule(tok, (pairs, [0] * len(pairs)), {}, max_length=max_length,
                                      pair_truncation="boundary")
    cls, seg = [], []
    with torch.inference_mode():
        for i in range(0, len(pairs), batch):
            enc = dm._boundary_pairs(pairs[i : i + batch])
            h = model(**enc).last_hidden_state
            cls.append(h[:, 0].numpy())
            seg.append(segment_means(h, enc["attention_mask"], enc["token_type_ids"]).numpy())
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
    from qe.core.offline import encoder_path

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
