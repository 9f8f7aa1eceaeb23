"""The lone unexplained words the default triple check flags (``lexicon=webnlg``), on the faithful WebNLG 2020
development references and on the WebNLG 2020 rated system outputs, with the part of speech and dependency label
spaCy's ``en_core_web_md`` (tagger and parser) gives each in its text (docs/results/content-log.md, section
"Abbreviations before a number, and a lone adverb (triples)"). Analysis only: nothing here decides a rule, and no
rating is read (the outputs are only texts here).

    OMP_NUM_THREADS=1 python -m experiments.lone_words --data-dir ../shared/data [--list]
"""
from __future__ import annotations

import argparse
from collections import Counter


def lone_words(texts: list[str], mrs: list[str], scorer, nlp) -> list[tuple[int, str, str, str]]:
    """``(index, word, part of speech, dependency label)`` of each one-word stretch no triple explains."""
    out = []
    for k, al in enumerate(scorer.align(texts, mrs)):
        for h in al.to_dict()["hallucinated"]:
            word = h.get("value") or ""
            if h.get("kind") != "words" or len(word.split()) != 1:
                continue
            tok = next((t for t in nlp(texts[k]) if t.lower_ == word or t.lower_.replace("-", "") == word), None)
            out.append((k, word, tok.pos_ if tok is not None else "?", tok.dep_ if tok is not None else "?"))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.lone_words", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--list", action="store_true", help="also print every word with its labels")
    a = ap.parse_args(argv)
    from experiments.content_precision import webnlg_items
    from qe.content.scorer import CoverageScorer
    from qe.core.offline import load_spacy
    from qe.data.webnlg import webnlg2020

    nlp = load_spacy("en_core_web_md", disable=("ner",))
    sc = CoverageScorer(lexicon="webnlg", data_dir=a.data_dir)
    refs = webnlg_items("dev", a.data_dir)
    outs = webnlg2020(a.data_dir)
    for name, texts, mrs in (("faithful dev references", [i.ref for i in refs], [i.mr for i in refs]),
                             ("rated system outputs", [r.output for r in outs], [r.mr for r in outs])):
        got = lone_words(texts, mrs, sc, nlp)
        print(f"{name}: {len(got)} lone words; part of speech {dict(Counter(x[2] for x in got).most_common())}; "
              f"advmod {sum(x[3] == 'advmod' for x in got)}")
        if a.list:
            for k, word, pos, dep in got:
                print(f"  {k}\t{word}\t{pos}\t{dep}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
