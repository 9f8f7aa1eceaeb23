"""Tokenisation for the language models: a word vocabulary and SentencePiece units over the same text.

Both start from the same normalisation so the word LM and the SentencePiece LM see identical token boundaries:

1. lower-case (``lowercase: true``, the default: NLG outputs such as EMNLP17's are lower-cased);
2. :func:`word_tokenize`: words, numbers and punctuation split apart, English clitics (``'s``, ``n't``) separate,
   a literal ``<unk>`` (WikiText's rare-word marker) kept as one token;
3. word LM: tokens -> ids through :class:`WordTokenizer` (capped vocabulary, ``<unk>`` for the rest);
   SentencePiece LM: the tokens joined by spaces are encoded by a SentencePiece model trained on the same corpus
   (``<unk>`` markers become U+2047 so they are one symbol, not three pieces).

The regular expression is written here (no dependency covers this exact, reversible rule set); it is a small
PTB-like rule: clitics split, hyphens split, decimals and abbreviations with inner dots kept.
"""
from __future__ import annotations

import io
import json
import re
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

from qe.core.jsonio import dumps

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SPECIALS = (PAD, UNK, BOS, EOS)
SP_UNK_MARK = "\u2047"
TOKENIZER_FILE = "tokenizer.json"

_TOKEN_RE = re.compile(
    r"""<unk>                       # WikiText rare-word marker
      | \w+(?=n't\b)                # do|n't
      | n't\b
      | '(?:s|re|ve|ll|d|m)\b       # clitics
      | \w+(?:\.\w+)*               # words, numbers, 3.5, u.s
      | \S                          # any other single character
    """,
    re.X | re.I | re.U,
)


def word_tokenize(text: str, lowercase: bool = True) -> list[str]:
    if lowercase:
        text = text.lower()
    return _TOKEN_RE.findall(text)


class Tokenizer:
    """Common interface: ``encode(text) -> list[int]`` (no boundary symbols), special ids, save/load."""

    type: str = "base"
    pad_id, unk_id, bos_id, eos_id = 0, 1, 2, 3

    def __init__(self, lowercase: bool = True):
        self.lowercase = lowercase

    def words(self, text: str) -> list[str]:
        return word_tokenize(text, self.lowercase)

    def tokenize(self, text: str) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def encode(self, text: str) -> list[int]:  # pragma: no cover - abstract
        raise NotImplementedError

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.encode(t) for t in texts]

    @property
    def vocab_size(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def settings(self) -> dict:
        return {"type": self.type, "lowercase": self.lowercase}

    def save(self, directory: str | Path) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class WordTokenizer(Tokenizer):
    type = "word"

    def __init__(self, itos: Sequence[str], lowercase: bool = True):
        super().__init__(lowercase)
        if tuple(itos[:4]) != SPECIALS:
            raise ValueError(f"word vocabulary must start with {SPECIALS}, got {tuple(itos[:4])}")
        self.itos = list(itos)
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    @classmethod
    def train(cls, sentences: Iterable[str], max_size: int = 50000, min_freq: int = 1, lowercase: bool = True):
        counts: Counter[str] = Counter()
        for s in sentences:
            counts.update(word_tokenize(s, lowercase))
        counts.pop(UNK, None)
        for sp in SPECIALS:
            counts.pop(sp, None)
        # most frequent first; ties broken alphabetically so the vocabulary is deterministic
        ranked = sorted((t for t, c in counts.items() if c >= min_freq), key=lambda t: (-counts[t], t))
        return cls(list(SPECIALS) + ranked[: max(0, max_size - len(SPECIALS))], lowercase)

    def tokenize(self, text: str) -> list[str]:
        return self.words(text)

    def encode(self, text: str) -> list[int]:
        unk = self.unk_id
        return [self.stoi.get(t, unk) for t in self.words(text)]

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def decode(self, ids: Iterable[int]) -> str:
        return " ".join(self.itos[i] for i in ids)

    def settings(self) -> dict:
        return {**super().settings(), "vocab_file": "vocab.json"}

    def save(self, directory: str | Path) -> None:
        d = Path(directory)
        (d / "vocab.json").write_text(dumps(self.itos, ensure_ascii=False), encoding="utf-8")
        (d / TOKENIZER_FILE).write_text(dumps(self.settings(), indent=2, ensure_ascii=True), encoding="utf-8")


class SentencePieceTokenizer(Tokenizer):
    type = "sp"

    def __init__(self, model_proto: bytes, lowercase: bool = True, vocab_size_requested: int | None = None):
        import sentencepiece as spm

        super().__init__(lowercase)
        self.model_proto = model_proto
        #: the ``vocab_size`` training asked for, when the corpus gave fewer pieces (None: the size was reached)
        self.vocab_size_requested = vocab_size_requested
        self.sp = spm.SentencePieceProcessor()
        self.sp.LoadFromSerializedProto(model_proto)
        for name, want in (("pad", 0), ("unk", 1), ("bos", 2), ("eos", 3)):
            got = getattr(self.sp, f"{name}_id")()
            if got != want:
                raise ValueError(f"sentencepiece model has {name}_id={got}, expected {want}")

    def _prep(self, text: str) -> str:
        return " ".join(SP_UNK_MARK if t == UNK else t for t in self.words(text))

    @classmethod
    def train(
        cls,
        sentences: Iterable[str],
        vocab_size: int = 16000,
        model_type: str = "unigram",
        character_coverage: float = 1.0,
        hard_vocab_limit: bool = False,
        lowercase: bool = True,
        seed_sentencepiece_size: int = 1_000_000,
        input_sentence_size: int = 2_000_000,
        num_threads: int = 4,
    ):
        import sentencepiece as spm

        helper = cls.__new__(cls)
        Tokenizer.__init__(helper, lowercase)
        prepared = [p for p in (helper._prep(s) for s in sentences) if p]
        if not prepared:
            raise ValueError("cannot train sentencepiece on an empty corpus")
        buf = io.BytesIO()
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(prepared),
                model_writer=buf,
                vocab_size=vocab_size,
                model_type=model_type,
                character_coverage=character_coverage,
                hard_vocab_limit=hard_vocab_limit,
                pad_id=0, unk_id=1, bos_id=2, eos_id=3,
                pad_piece=PAD, unk_piece=UNK, bos_piece=BOS, eos_piece=EOS,
                input_sentence_size=input_sentence_size,
                shuffle_input_sentence=False,
                seed_sentencepiece_size=seed_sentencepiece_size,
                num_threads=num_threads,
                minloglevel=2,
            )
        except RuntimeError as exc:  # hard_vocab_limit: true and a corpus too small for the size
            m = re.search(r"Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)", str(exc))
            if not m:
                raise
            raise ValueError(f"tokenizer.vocab_size={m.group(1)} is more pieces than this corpus supports "
                             f"(<= {m.group(2)}, tokenizer.hard_vocab_limit=true): set tokenizer.vocab_size<="
                             f"{m.group(2)}, or hard_vocab_limit=false to take the largest size it supports") from None
        tok = cls(buf.getvalue(), lowercase)
        if tok.vocab_size < vocab_size:
            tok.vocab_size_requested = int(vocab_size)
        return tok

    def tokenize(self, text: str) -> list[str]:
        return self.sp.encode(self._prep(text), out_type=str)

    def encode(self, text: str) -> list[int]:
        return self.sp.encode(self._prep(text))

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return self.sp.encode([self._prep(t) for t in texts])

    def decode(self, ids: Iterable[int]) -> str:
        return self.sp.decode(list(ids))

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def settings(self) -> dict:
        out = {**super().settings(), "model_file": "spm.model"}
        # fewer pieces than asked for (hard_vocab_limit: false): both numbers travel with the tokenizer (a resumed
        # run loads it from the run's cache) into the export's manifest (qe.lm.format.save)
        if self.vocab_size_requested is not None:
            out["vocab_size_requested"] = self.vocab_size_requested
        return out

    def shortfall(self) -> str | None:
        """One line when training gave fewer pieces than ``tokenizer.vocab_size`` asked for, else None."""
        if self.vocab_size_requested is None or self.vocab_size_requested <= self.vocab_size:
            return None
        return (f"tokenizer.vocab_size={self.vocab_size_requested} requested, but this corpus supports only "
                f"{self.vocab_size} sentencepiece pieces: the model uses {self.vocab_size} (recorded as the export's "
                f"tokenizer vocab_size; set tokenizer.vocab_size={self.vocab_size} or train on more text)")

    def save(self, directory: str | Path) -> None:
        d = Path(directory)
        (d / "spm.model").write_bytes(self.model_proto)
        (d / TOKENIZER_FILE).write_text(dumps(self.settings(), indent=2, ensure_ascii=True), encoding="utf-8")


def train_tokenizer(cfg: dict, sentences: Sequence[str]) -> Tokenizer:
    """Build a tokenizer from a ``conf/tokenizer/*.yaml`` mapping."""
    cfg = dict(cfg)
    kind = cfg.pop("type", "word")
    if kind == "word":
        return WordTokenizer.train(sentences, max_size=int(cfg.get("max_size", 50000)),
                                   min_freq=int(cfg.get("min_freq", 1)), lowercase=bool(cfg.get("lowercase", True)))
    if kind in ("sp", "sentencepiece", "wordpiece"):
        return SentencePieceTokenizer.train(
            sentences,
            vocab_size=int(cfg.get("vocab_size", 16000)),
            model_type=str(cfg.get("model_type", "unigram")),
            character_coverage=float(cfg.get("character_coverage", 1.0)),
            hard_vocab_limit=bool(cfg.get("hard_vocab_limit", False)),
            lowercase=bool(cfg.get("lowercase", True)),
        )
    raise ValueError(f"unknown tokenizer type {kind!r}; use 'word' or 'sp'")


def load_tokenizer(directory: str | Path) -> Tokenizer:
    d = Path(directory)
    f = d / TOKENIZER_FILE
    if not f.is_file():
        raise FileNotFoundError(f"{d}: no {TOKENIZER_FILE}")
    s = json.loads(f.read_text(encoding="utf-8"))
    if s["type"] == "word":
        return WordTokenizer(json.loads((d / s.get("vocab_file", "vocab.json")).read_text(encoding="utf-8")),
                             lowercase=s.get("lowercase", True))
    if s["type"] == "sp":
        return SentencePieceTokenizer((d / s.get("model_file", "spm.model")).read_bytes(),
                                      lowercase=s.get("lowercase", True),
                                      vocab_size_requested=s.get("vocab_size_requested"))
    raise ValueError(f"{f}: unknown tokenizer type {s['type']!r}")
