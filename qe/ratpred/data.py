"""RatPred data: cross-validation folds over the rated records, training sets for setups S1-S6, C1-C3 splits,
vocabulary and tensors.

Folds (:func:`make_parts`, :func:`cv_fold`): records are grouped - ``group_by="mr_output"`` (default, as the
authors' converter: identical (MR, output) pairs, e.g. two systems producing the same text, stay together, but
other outputs for the same MR may sit in other parts) or ``group_by="mr"`` (stricter: all outputs for one MR
in one part, so no test MR is ever seen in training, not even through its references in S3/S4) - the groups
are shuffled with the seed and dealt into ``n_parts`` parts of near-equal record counts. Fold ``k`` trains on parts k, k+1, k+2, validates on k+3 and tests on k+4 (mod 5), the rotation of
the authors' converter (3 / 1 / 1).

Synthetic sources (:data:`SOURCES`, Section 4 of the paper); a setup is a list of them:

* ``train_outputs``  - the training part's system outputs with their median ratings, distorted (S2+);
* ``train_refs``     - human references of the training part's MRs, rating 6, plus distortions (S3+);
* ``source_train``   - every reference of the source datasets' training splits (SF Hotel / SF Restaurant
  ``train.json``; BAGEL has no separate training split in the rated data) (S4+);
* ``test_refs``      - human references of the test part's MRs (S5+; not strictly referenceless);
* ``source_all``     - every reference of the complete source datasets: SF train + valid + test, all BAGEL (S6);
* ``target_refs``    - references of a new target domain's MRs (``protocol.target_data``, e.g. E2E dev or WebNLG
  train), for a domain that has references but no ratings (not in the paper's setups; the E2E and WebNLG recipes use
  it); ``protocol.target_refs_per_mr`` keeps the first k references of each target MR (:func:`limit_refs_per_mr`).

Error types (:mod:`qe.ratpred.synth`): ``error_types`` chooses among the paper's five and the data-to-text errors for
triple MRs (default: the paper's five), ``error_penalties`` overrides the rating penalty of an error type. The
``wrong_value`` error draws from the entities of the triple MRs of the training records and the target data.

Test-part *system outputs* are never distorted or added; only the original training records, never dev or
test records, are used as rated instances.
"""
from __future__ import annotations

import logging
import math
import random
from collections import Counter
from dataclasses import dataclass

import numpy as np
import torch

from qe.data.record import Record
from qe.data.references import RefInstance, all_reference_instances, mr_key
from qe.errors import RecordError
from qe.ratpred.model import Vocab, collate
from qe.ratpred.mr import delexicalise, parse, relexicalise
from qe.core.mr import detect
from qe.ratpred.synth import (D2T_ERROR_TYPES, ERROR_TYPES, Dictionary, EntityPool, check_error_types, distort,
                               error_penalties, penalised_rating)

log = logging.getLogger(__name__)

SOURCES = ("train_outputs", "train_refs", "source_train", "test_refs", "source_all", "target_refs")
SETUPS: dict[str, tuple[str, ...]] = {
    "S1": (),
    "S2": ("train_outputs",),
    "S3": ("train_outputs", "train_refs"),
    "S4": ("train_outputs", "train_refs", "source_train"),
    "S5": ("train_outputs", "train_refs", "source_train", "test_refs"),
    "S6": ("train_outputs", "train_refs", "source_train", "test_refs", "source_all"),
}
MAX_RATING = 6.0


@dataclass
class Instance:
    mr: str
    output: str
    rating: float
    origin: str  # real / synth:<source> / ref:<source>
    n_errors: int = 0
    src: str = ""  # record id or reference source


def record_rating(rec: Record, target: str) -> float:
    if target not in rec.ratings:
        raise RecordError(f"record {rec.id!r}: no rating {target!r} (has {sorted(rec.ratings)})")
    v = rec.ratings[target]
    if v != v:
        raise RecordError(f"record {rec.id!r}: rating {target!r} is NaN")
    return float(v)


def _ref_key(mr: str, where: str = "<mr>") -> tuple:
    """Order-free key of an MR, to count a reference once: :func:`qe.data.references.mr_key` for one dialogue
    act (as always for EMNLP17), the sorted normalised (act, slot, value) triples for the other MR formats."""
    acts = parse(mr, where)
    if len(acts) == 1 and detect(mr) == "da":
        return mr_key(mr, where=where)
    return ("acts", tuple(sorted((a, s, v or "") for a, slots in acts for s, v in slots)))


def real_instances(records: list[Record], target: str) -> list[Instance]:
    out = []
    for r in records:
        if not r.mr:
            raise RecordError(f"record {r.id!r}: field 'mr' is missing (RatPred needs an MR per output)")
        out.append(Instance(r.mr, r.output, record_rating(r, target), "real", 0, r.id))
    return out


# ---------------------------------------------------------------------------------------------- folds
GROUP_BY = ("mr_output", "mr")


def _group_key(r: Record, group_by: str = "mr_output") -> tuple:
    if group_by == "mr":
        return (r.dataset or "", r.mr or "")
    if group_by == "mr_output":
        return (r.dataset or "", r.mr or "", r.output)
    raise ValueError(f"group_by={group_by!r}: choose one of {GROUP_BY}")


def shuffled_groups(records: list[Record], seed: int, group_by: str = "mr_output") -> list[list[Record]]:
    """Records grouped (identical (MR, output) pairs, or whole MRs), groups in a seeded random order."""
    groups: dict[tuple, list[Record]] = {}
    for r in records:
        groups.setdefault(_group_key(r, group_by), []).append(r)
    keys = sorted(groups)
    random.Random(seed).shuffle(keys)
    return [groups[k] for k in keys]


def make_parts(records: list[Record], n_parts: int = 5, seed: int = 1206,
               group_by: str = "mr_output") -> list[list[Record]]:
    """Shuffle record groups with ``seed`` and deal them into ``n_parts`` parts of near-equal size."""
    if n_parts < 3:
        raise ValueError("need at least 3 parts (train / dev / test)")
    groups = shuffled_groups(records, seed, group_by)
    parts: list[list[Record]] = [[] for _ in range(n_parts)]
    target = len(records) / n_parts
    k = 0
    for g in groups:  # fill part k up to its share, then move on (contiguous, like the authors' split)
        if len(parts[k]) >= target * 0.999 and k < n_parts - 1:
            k += 1
        parts[k].extend(g)
    return parts


def cv_fold(parts: list[list[Record]], fold: int, n_train: int = 3, n_dev: int = 1) -> tuple[list, list, list]:
    n = len(parts)
    if not 0 <= fold < n:
        raise ValueError(f"fold {fold} out of range 0..{n - 1}")
    rot = parts[fold:] + parts[:fold]
    train = [r for p in rot[:n_train] for r in p]
    dev = [r for p in rot[n_train:n_train + n_dev] for r in p]
    test = [r for p in rot[n_train + n_dev:] for r in p]
    return train, dev, test


def in_set_split(records: list[Record], in_set: dict, n_small: int = 200, n_small_dev: int = 100,
                 seed: int = 1206, group_by: str = "mr_output") -> dict[str, list[Record]]:
    """C1-C3 (paper 4.2): ``in_set`` e.g. {"dataset": "SFHOT"} or {"system": "LOLS"}.

    Returns parts: ``small_train`` (about n_small - n_small_dev in-set records), ``small_dev`` (about n_small_dev
    in-set), ``in_test`` (rest of the in-set), ``out_train`` / ``out_dev`` (out-of-set, 4:1). Groups (``group_by``,
    as :func:`make_parts`) are kept together: the in-set groups, shuffled with ``seed``, fill ``small_train`` up
    to its share, then ``small_dev`` up to ``n_small`` records, then ``in_test`` - a part closes at a group
    boundary, so it may exceed its share by less than one group.
    """
    def is_in(r):
        return all(getattr(r, k) == v for k, v in in_set.items())

    ins = [r for r in records if is_in(r)]
    outs = [r for r in records if not is_in(r)]
    small_train: list[Record] = []
    small_dev: list[Record] = []
    test: list[Record] = []
    for g in shuffled_groups(ins, seed, group_by):
        if len(small_train) < n_small - n_small_dev:
            small_train.extend(g)
        elif len(small_train) + len(small_dev) < n_small:
            small_dev.extend(g)
        else:
            test.extend(g)
    op = make_parts(outs, n_parts=5, seed=seed, group_by=group_by)
    return {"small_train": small_train, "small_dev": small_dev, "in_test": test,
            "out_train": [r for p in op[:4] for r in p], "out_dev": op[4]}


# ------------------------------------------------------------------------------------ synthetic data
def _distorted(inst: Instance, max_errors: int, rng: np.random.Generator, dictionary: Dictionary,
               source: str, delex: bool, kinds: tuple[str, ...] = ERROR_TYPES,
               penalties: dict[str, float] | None = None) -> list[Instance]:
    d = delexicalise(inst.mr, inst.output, delex=delex, where=f"{inst.src} field 'mr'")
    # this MR's own entities are never drawn as a wrong value
    avoid = frozenset(" ".join(v) for vs in d.values.values() for v in vs) if d.triples else frozenset()
    out = []
    for n in range(1, max_errors + 1):
        toks, done = distort(d.out_tokens, n, rng, dictionary, kinds, triples=d.triples, avoid=avoid)
        rating = penalised_rating(inst.rating, done, penalties)
        text = " ".join(relexicalise(toks, d.values))
        out.append(Instance(inst.mr, text, rating, f"synth:{source}", n, inst.src))
    return out


def limit_refs_per_mr(records: list[Record], k: int | None) -> list[Record]:
    """Target records reduced to one per distinct MR (the first) holding the first ``k`` of its references (and their
    ``ref_sources``); ``k`` None or 0: the records unchanged."""
    if not k:
        return records
    if int(k) < 0:
        raise ValueError(f"target_refs_per_mr must be >= 0, got {k}")
    out, seen = [], set()
    for r in records:
        if r.mr in seen:
            continue
        seen.add(r.mr)
        extra = dict(r.extra)
        if "ref_sources" in extra:
            extra["ref_sources"] = list(extra["ref_sources"])[:int(k)]
        out.append(Record(id=r.id, output=r.output, system=r.system, dataset=r.dataset, mr=r.mr, source=r.source,
                          refs=list(r.refs)[:int(k)], ratings=dict(r.ratings), metrics=dict(r.metrics), extra=extra))
    return out


def _ref_instances(refs: list[RefInstance]) -> list[Instance]:
    return [Instance(r.mr, r.ref, MAX_RATING, "ref", 0, r.source) for r in refs]


def _record_refs(records: list[Record], source: str) -> list[Instance]:
    out = []
    for r in records:
        srcs = r.extra.get("ref_sources") or [f"{r.id}#ref{i}" for i in range(len(r.refs))]
        for ref, s in zip(r.refs, srcs):
            out.append(Instance(r.mr, ref, MAX_RATING, f"ref:{source}", 0, s))
    return out


def build_training_set(train: list[Record], test: list[Record], sources: tuple[str, ...] | list[str],
                       target: str = "quality", max_errors: int = 4, seed: int = 1206,
                       ref_pool: list[RefInstance] | None = None, delex: bool = True,
                       dictionary: Dictionary | None = None,
                       target_data: list[Record] | None = None, error_types=ERROR_TYPES,
                       penalties: dict[str, float] | None = None) -> tuple[list[Instance], list[Instance], dict]:
    """(original instances, synthetic + reference instances, counts) for one fold.

    Original = the training records (real outputs, median ratings). Synthetic = per ``sources``: references
    enter at rating 6 and with 1..``max_errors`` errors; training outputs with 1..``max_errors`` errors
    (distinct (MR, output) pairs; their median rating lowered). ``test`` records only contribute their MRs'
    *references* (``test_refs``), never their outputs. ``ref_pool``: source-dataset references
    (:func:`qe.data.references.all_reference_instances`), needed by ``source_train`` / ``source_all``.
    ``target_data``: records of an unrated target domain; only their MRs and references are used
    (``target_refs``). ``error_types``: the error types to draw from (:mod:`qe.ratpred.synth`; default the paper's
    five), ``penalties``: rating penalties overriding :data:`qe.ratpred.synth.ERROR_PENALTY`.
    """
    bad = [s for s in sources if s not in SOURCES]
    if bad:
        raise ValueError(f"unknown synthetic source(s) {bad}; choose from {SOURCES}")
    kinds = check_error_types(error_types)
    pens = error_penalties(penalties)
    rng = np.random.default_rng(seed)
    orig = real_instances(train, target)
    if dictionary is None:
        pool = None
        if "wrong_value" in kinds:  # the entities of every triple MR the training set sees
            pool = EntityPool.from_mrs([r.mr for r in train] + [r.mr for r in target_data or []])
        dictionary = Dictionary.from_token_lists(
            (delexicalise(i.mr, i.output, delex=delex, where=i.src).out_tokens for i in orig), entities=pool)
    if set(kinds) & set(D2T_ERROR_TYPES) and not delex:
        raise ValueError(f"error types {sorted(set(kinds) & set(D2T_ERROR_TYPES))} act on delexicalised triples: "
                         "they need delex=true")
    extra: list[Instance] = []
    seen_refs: set[tuple] = set()

    def add_refs(insts: list[Instance], source: str):
        for i in insts:
            key = (_ref_key(i.mr, i.src), i.output)
            if key in seen_refs:
                continue
            seen_refs.add(key)
            i.origin = f"ref:{source}"
            extra.append(i)
            extra.extend(_distorted(i, max_errors, rng, dictionary, source, delex, kinds, pens))

    for source in sources:
        if source == "train_outputs":
            seen: set[tuple] = set()
            for i in orig:
                if (i.mr, i.output) in seen:
                    continue
                seen.add((i.mr, i.output))
                extra.extend(_distorted(i, max_errors, rng, dictionary, source, delex, kinds, pens))
        elif source == "train_refs":
            add_refs(_record_refs(train, source), source)
        elif source == "test_refs":
            add_refs(_record_refs(test, source), source)
        elif source == "target_refs":
            if not target_data:
                raise ValueError("source 'target_refs' needs target_data (protocol.target_data: records with refs)")
            add_refs(_record_refs(target_data, source), source)
        elif source in ("source_train", "source_all"):
            if ref_pool is None:
                raise ValueError(f"source {source!r} needs ref_pool (the source datasets' references)")
            pool = [r for r in ref_pool if source == "source_all" or r.split == "train"]
            add_refs(_ref_instances(pool), source)
    # guard: distorted system outputs come from training records only
    train_ids = {r.id for r in train}
    leaked = [i.src for i in extra if i.origin == "synth:train_outputs" and i.src not in train_ids]
    if leaked:
        raise AssertionError(f"non-training outputs leaked into synthetic data: {leaked[:3]}")
    counts = dict(Counter(i.origin for i in extra))
    counts["original"] = len(orig)
    counts["total"] = len(orig) + len(extra)
    return orig, extra, counts


def reference_pool(data_dir=None) -> list[RefInstance]:
    return all_reference_instances(data_dir)


# ------------------------------------------------------------------------------------------ tensors
def encode_instances(insts: list[Instance], vocab: Vocab, delex: bool = True, max_len: int = 50, sent=None,
                     content=None):
    """-> (mr_ids, out_ids, ratings) lists; outputs longer than max_len tokens keep their first max_len
    (the authors' ``max_sent_len``; rated outputs are at most ~40 tokens, so this only bounds distorted refs).
    With ``sent`` (a :class:`qe.ratpred.sentvec.SentenceVectors`) two more lists follow: the sentence vectors of
    the (delexicalised, linearised) MR text and of the whole (delexicalised) output text; with a
    :class:`qe.ratpred.sentvec.SentenceTokens` (fine-tuned encoder), their sub-word id lists instead. With a
    :class:`qe.ratpred.cross.PairTokens` (cross-encoder) one more list follows, each pair's (ids, token types), and
    the vocabulary ids are a placeholder ``[1]`` each (the cross-encoder reads only the pair: no GRU ids are kept).
    With ``content`` (a :class:`qe.ratpred.content_features.ContentFeatures`) a last list follows: the content vector
    of each instance's *lexical* MR and output (``Instance`` keeps both as written; synthetic outputs are stored
    relexicalised)."""
    cols = _encode_columns(insts, vocab, delex, max_len, sent)
    if content is None:
        return cols
    return (*cols, content([i.mr for i in insts], [i.output for i in insts], [f"{i.src} field 'mr'" for i in insts]))


def _encode_columns(insts: list[Instance], vocab: Vocab, delex: bool, max_len: int, sent):
    pairs = getattr(sent, "pairs", False)
    mrs, outs, ys, mr_txt, out_txt = [], [], [], [], []
    for i in insts:
        d = delexicalise(i.mr, i.output, delex=delex, where=i.src)
        mrs.append([1] if pairs else vocab.encode(d.mr_tokens)[:max_len * 3])
        outs.append([1] if pairs else vocab.encode(d.out_tokens)[:max_len])
        ys.append(i.rating)
        if sent is not None:
            mr_txt.append(" ".join(d.mr_tokens))
            out_txt.append(" ".join(d.out_tokens))
    if sent is None:
        return mrs, outs, ys
    if pairs:
        return mrs, outs, ys, sent(mr_txt, out_txt)
    return mrs, outs, ys, list(sent(mr_txt)), list(sent(out_txt, progress=True))


class LengthBucketSampler(torch.utils.data.Sampler):
    """Shuffled batches of ``batch_size`` items of similar length (less padding for the cross-encoder): each pass
    permutes the items with ``generator``, sorts each chunk of ``batch_size * chunk`` consecutive items by length,
    cuts the chunks into batches and shuffles the batches. Every item is seen once per pass; the batch size is
    fixed (the last batch of a chunk may be smaller), so the loss weighs every instance alike."""

    def __init__(self, lengths: list[int], batch_size: int, generator: torch.Generator, chunk: int = 50):
        self.lengths, self.batch_size, self.generator, self.chunk = list(lengths), int(batch_size), generator, chunk

    def __iter__(self):
        n, size = len(self.lengths), self.batch_size * self.chunk
        perm = torch.randperm(n, generator=self.generator).tolist()
        batches = []
        for k in range(0, n, size):
            part = sorted(perm[k:k + size], key=lambda i: self.lengths[i])
            batches.extend(part[j:j + self.batch_size] for j in range(0, len(part), self.batch_size))
        for b in torch.randperm(len(batches), generator=self.generator).tolist():
            yield batches[b]

    def __len__(self) -> int:
        n, size = len(self.lengths), self.batch_size * self.chunk
        return sum(math.ceil(min(size, n - k) / self.batch_size) for k in range(0, n, size))


#: padded pair pieces per forward pass when the cross-encoder predicts (dev selection, test parts)
EVAL_TOKENS = 16_384


class RatingDataset(torch.utils.data.Dataset):
    def __init__(self, *columns):
        self.columns = columns
        self.ys = columns[2]

    def __len__(self):
        return len(self.ys)

    def __getitem__(self, i):
        return tuple(c[i] for c in self.columns)


def make_loader(insts: list[Instance], vocab: Vocab, delex: bool, batch_size: int, shuffle: bool,
                seed: int = 0, sent=None, content=None) -> torch.utils.data.DataLoader:
    """Batches of encoded instances (:func:`qe.ratpred.model.collate`); a shuffled loader draws its order from
    its own generator seeded with ``seed``, so the order does not depend on what else consumed torch's RNG.
    ``sent``: sentence vectors for the sentence-encoder variants, ``content``: content features
    (:func:`encode_instances`).

    Cross-encoder pairs (``sent`` a :class:`qe.ratpred.cross.PairTokens`): a shuffled loader draws length-bucketed
    batches of ``batch_size`` (:class:`LengthBucketSampler`); an unshuffled one runs longest first under a token budget
    (:func:`qe.core.runtime.length_sorted_batches`, at most :data:`EVAL_TOKENS` padded pieces and ``batch_size`` pairs
    per batch) and carries ``loader.order``, the instance index of each row in batch order, to restore input order."""
    ds = RatingDataset(*encode_instances(insts, vocab, delex, sent=sent, content=content))
    g = torch.Generator()
    g.manual_seed(seed)
    if getattr(sent, "pairs", False) and len(ds):
        lengths = [len(p[0]) for p in ds.columns[3]]
        if shuffle:
            return torch.utils.data.DataLoader(ds, batch_sampler=LengthBucketSampler(lengths, batch_size, g),
                                               collate_fn=collate, num_workers=0)
        from qe.core.runtime import length_sorted_batches

        batches = length_sorted_batches(lengths, EVAL_TOKENS, batch_size)
        loader = torch.utils.data.DataLoader(ds, batch_sampler=batches, collate_fn=collate, num_workers=0)
        loader.order = [i for b in batches for i in b]
        return loader
    return torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=shuffle, collate_fn=collate,
                                       generator=g if shuffle else None, num_workers=0)
