"""Would "a wrong object of the same kind" pay? (docs/results/content-triples.md, "What remains weak")

Pairs each triple the matcher calls ``omitted`` with each ``hallucinated`` entry of the same output, on the triple
fact gold (a pair is *gold-wrong* when the gold labels that triple ``wrong``) and on the clean ``good`` WebNLG 2020
development references (every pair false: they state every fact right), and prints how alike the object's text and
the stretch are: the cosine of MiniLM mean-pooled embeddings and of spaCy ``en_core_web_md`` vectors. A rule
"omitted + an alike stretch = wrong" pays only if the gold-wrong pairs stand above the clean ones.

    python -m experiments.triple_pair_similarity --data-dir ../shared/data     # about 30 s on the 2-core CPU box
"""
from __future__ import annotations

import argparse

import numpy as np


def pairs(data_dir: str | None):
    from experiments.triple_fact_gold import entry_index, load_gold
    from qe.content import Matcher
    from qe.content.scorer import dataset_lexicon
    from qe.core.surface import entity_text

    m = Matcher(dataset_lexicon("webnlg", data_dir))
    entries = entry_index(data_dir)
    gold_wrong, gold_other, clean = [], [], []

    def collect(mr, text, labels, into):
        al = m.align(mr, text)
        for k, v in enumerate(al.verdicts):
            if v.status != "omitted":
                continue
            obj = entity_text(v.value.split(" | ", 1)[1])
            for h in al.hallucinated:
                out = into if labels is None else (gold_wrong if labels[k] == "wrong" else gold_other)
                out.append((v.slot, obj, str(h.get("said"))))

    for g in load_gold():
        e = entries[g["id"]]
        collect(e.mr, g["output"], g["labels"], None)
    for e in entries.values():
        for x in e.lexes:
            if x.comment == "good":
                collect(e.mr, x.text, None, clean)
    return gold_wrong, gold_other, clean


def similarities(rows) -> tuple[np.ndarray, np.ndarray]:
    import torch
    from transformers import AutoModel, AutoTokenizer

    from qe.core.offline import load_spacy, minilm_path

    tok = AutoTokenizer.from_pretrained(str(minilm_path()))
    model = AutoModel.from_pretrained(str(minilm_path())).eval()

    def emb(texts):
        b = tok(texts, padding=True, return_tensors="pt")
        with torch.no_grad():
            h = model(**b).last_hidden_state
        mask = b["attention_mask"].unsqueeze(-1).float()
        return torch.nn.functional.normalize((h * mask).sum(1) / mask.sum(1), dim=-1).numpy()

    nlp = load_spacy("en_core_web_md")

    def vec(t):
        v = nlp(t).vector
        n = np.linalg.norm(v)
        return v / n if n else v

    if not rows:
        return np.zeros(0), np.zeros(0)
    minilm = (emb([r[1] for r in rows]) * emb([r[2] for r in rows])).sum(1)
    spacy = np.array([float(vec(r[1]) @ vec(r[2])) for r in rows])
    return minilm, spacy


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--threshold", type=float, default=0.45, help="count the pairs at or above this MiniLM cosine")
    a = ap.parse_args(argv)
    groups = dict(zip(("gold wrong", "gold not wrong", "clean references"), pairs(a.data_dir)))
    print("| pairs | n | MiniLM cosine: min / q1 / median / q3 / max | spaCy md | at or above "
          f"{a.threshold} (MiniLM) |")
    print("|---|---|---|---|---|")
    for name, rows in groups.items():
        s1, s2 = similarities(rows)
        q = lambda s: " / ".join(f"{x:.2f}" for x in np.quantile(s, [0, .25, .5, .75, 1])) if len(s) else "-"  # noqa: E731
        print(f"| {name} | {len(rows)} | {q(s1)} | {q(s2)} | {int((s1 >= a.threshold).sum())} |")
        top = sorted(zip(s1, rows), key=lambda z: -z[0])[:6]
        for s, r in top:
            print(f"|   {r[0]}: {r[1]} / {r[2]} | | {s:.2f} | | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
