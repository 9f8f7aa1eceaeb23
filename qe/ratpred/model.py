"""The RatPred network (paper Section 2, Figure 1), its input encoding and its prediction rule.

Two GRU encoders (MR tokens, output tokens), each with its own embedding table; dropout on the encoder
inputs; the final hidden states are concatenated and passed through ``tanh_layers`` square tanh layers
(eqs. 3-4) and a linear layer to one number (eq. 5). :class:`Vocab` / :func:`collate` turn delexicalised
token lists into the network's padded id tensors; :func:`round_clip` is the paper's prediction rule (round to
0.5, clip to the training range) and :func:`correlations` the figures every table reports.

Sentence-encoder variants (not in the paper; the "paper-plus" lever): ``encoder="sentence"`` replaces the
two GRU encoders by fixed sentence vectors of the MR and the output (mean-pooled MiniLM, :mod:`qe.ratpred.sentvec`),
combined as ``[u, v, |u - v|, u * v]`` (the usual sentence-pair features); ``encoder="both"`` concatenates those
features with the GRU states. The first tanh layer then maps the wider input to ``2 * hidden_size``; with
``encoder="gru"`` (the default) the network, its parameter names and its initialisation are the paper model's.
With ``finetune_sentence=True`` the network holds the sentence encoder itself (:meth:`RatPredNet.set_sentence_model`,
parameters ``sent_model.*``) and pools its sub-word states into the vectors in ``forward`` (mean over the pieces,
special tokens left out, L2-normalised: the frozen vectors' pooling), so the encoder is trained with the regressor.

Cross-encoder (``encoder="cross"``): one encoder reads the pair ``[CLS] linearised MR [SEP] output
[SEP]`` (token type 0 for the MR, 1 for the output; :class:`qe.ratpred.cross.PairTokens` builds the ids and applies
the truncation rule), so every output piece can attend to every MR piece - what a bi-encoder's two separate vectors
cannot do (a wrong value or a dropped triple changes a few tokens of a long text). The last layer's states are pooled
(``cross_pool``: ``mean`` over the pair's pieces, special tokens included, or the ``cls`` state), then dropout,
``tanh_layers`` square tanh layers of the encoder's width and the linear head. The encoder is always fine-tuned
(``finetune_sentence`` is implied; its parameters are ``sent_model.*``); there are no GRUs and no embedding tables.

Content features (``content_dim`` > 0; not in the paper, :mod:`qe.ratpred.content_features`): a small vector per
(MR, output) - what the content matcher finds realised, omitted, wrong, hallucinated - is concatenated to the input of
the first tanh layer (after the encoders' states, without dropout); ``content_dim=0`` (the default) leaves the network,
its parameters and its initialisation as they were. ``content_head_dim`` > 0 (the auxiliary variant): a linear layer on
the encoders' states (the first tanh layer's input, before any content features) predicts that many of those
features; ``forward`` keeps its output in ``aux`` for the training loss, the rating path is unchanged, and scoring
needs no matcher. Its parameters (``content_out.*``) are created after every other layer, so they draw nothing
from the initialisation of the rest.

Pure torch / numpy: the scorer imports this module, training (:mod:`qe.ratpred.module`) builds on it.
"""
from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from qe.core.config import conf_defaults

#: the defaults of model=ratpred_gru, written once in qe/conf/model/ratpred_gru.yaml
D = conf_defaults("model/ratpred_gru")


ENCODERS = ("gru", "sentence", "both", "cross")
#: pooling of the cross-encoder's last layer
CROSS_POOLS = ("mean", "cls")


class RatPredNet(nn.Module):
    def __init__(self, vocab_size: int, embedding_dim: int = D["embedding_dim"], hidden_size: int = D["hidden_size"],
                 tanh_layers: int = D["tanh_layers"], dropout: float = D["dropout"], pad_id: int = 0,
                 encoder: str = D["encoder"], sent_dim: int = 0, finetune_sentence: bool = D["finetune_sentence"],
                 sent_lead: int = 1, sent_tail: int = 1, cross_pool: str = D["cross_pool"],
                 pair_max_len: int | None = D["pair_max_len"], content_dim: int = 0, content_head_dim: int = 0):
        super().__init__()
        if encoder not in ENCODERS:
            raise ValueError(f"encoder={encoder!r}: choose one of {', '.join(ENCODERS)}")
        if encoder != "gru" and sent_dim < 1:
            raise ValueError(f"encoder={encoder!r} needs sent_dim (the sentence vectors' width)")
        if tanh_layers < 1 and encoder in ("sentence", "both"):
            raise ValueError("the sentence-encoder variants need tanh_layers >= 1 (it maps their features)")
        if finetune_sentence and encoder == "gru":
            raise ValueError("finetune_sentence=True needs encoder='sentence', 'both' or 'cross' (the GRU model has no "
                             "sentence encoder)")
        if content_dim and tanh_layers < 1:
            raise ValueError("content features need tanh_layers >= 1 (they enter the first tanh layer)")
        if cross_pool not in CROSS_POOLS:
            raise ValueError(f"cross_pool={cross_pool!r}: choose one of {', '.join(CROSS_POOLS)}")
        self.encoder = encoder
        self.cross = encoder == "cross"
        self.finetune_sentence = bool(finetune_sentence) or self.cross  # a cross-encoder is always trained
        self.sent_lead, self.sent_tail = int(sent_lead), int(sent_tail)
        #: cross-encoder: its pooling, and the pair length in sub-words it was trained with (None: the model's window)
        self.cross_pool = cross_pool
        self.pair_max_len = None if pair_max_len is None else int(pair_max_len)
        self.sent_model: nn.Module | None = None
        self._types = True  # whether the attached encoder takes token_type_ids (set_sentence_model)
        self.use_gru, self.use_sent = encoder in ("gru", "both"), encoder in ("sentence", "both")
        if self.use_gru:
            self.emb_mr = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_id)
            self.emb_out = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_id)
        self.drop = nn.Dropout(dropout)
        if self.use_gru:
            self.gru_mr = nn.GRU(embedding_dim, hidden_size, batch_first=True)
            self.gru_out = nn.GRU(embedding_dim, hidden_size, batch_first=True)
        d = sent_dim if self.cross else 2 * hidden_size  # the cross-encoder's tanh layers keep its width
        d_in = sent_dim if self.cross else (d if self.use_gru else 0) + (4 * sent_dim if self.use_sent else 0)
        #: width of the content-feature vector appended to the first tanh layer's input (0: none)
        self.content_dim = int(content_dim)
        d_in += self.content_dim
        self.tanh = nn.ModuleList(nn.Linear(d_in if k == 0 else d, d) for k in range(tanh_layers))
        self.head = nn.Linear(d, 1)
        #: auxiliary head: how many content features it predicts from the encoders' states (0: none)
        self.content_head = int(content_head_dim)
        self.aux: torch.Tensor | None = None
        if self.content_head:
            self.content_out = nn.Linear(d_in - self.content_dim, self.content_head)

    def set_sentence_model(self, model: nn.Module) -> None:
        """Attach the (Hugging Face) sentence encoder that ``finetune_sentence`` trains: its parameters become
        ``sent_model.*`` of this network (saved and loaded with it)."""
        if not self.finetune_sentence:
            raise ValueError("set_sentence_model: this network was built with finetune_sentence=False")
        self.sent_model = model
        import inspect

        self._types = "token_type_ids" in inspect.signature(model.forward).parameters

    def encode_pairs(self, ids: torch.Tensor, types: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
        """The cross-encoder's pooled vector of padded pair ids (``lens`` counts the special tokens)."""
        if self.sent_model is None:
            raise ValueError("encoder='cross' but no encoder model is attached (set_sentence_model)")
        pos = torch.arange(ids.shape[1], device=ids.device)[None, :]
        attn = (pos < lens.to(ids.device)[:, None]).long()
        kw = {"input_ids": ids, "attention_mask": attn}
        if self._types:
            kw["token_type_ids"] = types
        hid = self.sent_model(**kw).last_hidden_state
        if self.cross_pool == "cls":
            return hid[:, 0]
        keep = attn[..., None].to(hid.dtype)
        return (hid * keep).sum(1) / keep.sum(1).clamp(min=1)

    def pool(self, ids: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
        """Sentence vectors of padded sub-word ids (special tokens included, ``lens`` counts them): the mean of the
        last layer's states over the pieces, L2-normalised; a text without pieces gets the zero vector."""
        if self.sent_model is None:
            raise ValueError("finetune_sentence=True but no sentence model is attached (set_sentence_model)")
        pos = torch.arange(ids.shape[1], device=ids.device)[None, :]
        lens = lens.to(ids.device)[:, None]
        attn = (pos < lens).long()
        hid = self.sent_model(input_ids=ids, attention_mask=attn).last_hidden_state
        keep = ((pos >= self.sent_lead) & (pos < lens - self.sent_tail)).to(hid.dtype)[..., None]
        mean = (hid * keep).sum(1) / keep.sum(1).clamp(min=1)
        return nn.functional.normalize(mean.float(), dim=-1)

    def _encode(self, emb, gru, x, lens):
        e = self.drop(emb(x))
        packed = pack_padded_sequence(e, lens.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        _, h = gru(packed)
        return h[-1]

    def forward(self, mr, mr_len, out, out_len, mr_vec=None, out_vec=None, mr_sub=None, mr_sub_len=None,
                out_sub=None, out_sub_len=None, pair=None, pair_type=None, pair_len=None, content=None):
        if self.content_dim and content is None:
            raise ValueError("this network reads content features: the batch needs them (content)")
        if self.cross:
            if pair is None:
                raise ValueError("encoder='cross': the batch needs pair ids (pair, pair_type, pair_len)")
            z = self.drop(self.encode_pairs(pair, pair_type, pair_len))
            if self.content_head:
                self.aux = self.content_out(z)
            if self.content_dim:
                z = torch.cat([z, content.to(z.dtype)], dim=-1)
            for lin in self.tanh:
                z = torch.tanh(lin(z))
            return self.head(z).squeeze(-1)
        parts = []
        if self.use_gru:
            parts += [self._encode(self.emb_mr, self.gru_mr, mr, mr_len),
                      self._encode(self.emb_out, self.gru_out, out, out_len)]
        if self.use_sent:
            if self.finetune_sentence:
                if mr_sub is None or out_sub is None:
                    raise ValueError("finetune_sentence=True: the batch needs sub-word ids (mr_sub, out_sub)")
                mr_vec, out_vec = self.pool(mr_sub, mr_sub_len), self.pool(out_sub, out_sub_len)
            if mr_vec is None or out_vec is None:
                raise ValueError(f"encoder={self.encoder!r}: the batch needs sentence vectors (mr_vec, out_vec)")
            u, v = mr_vec.to(self.head.weight.dtype), out_vec.to(self.head.weight.dtype)
            parts.append(self.drop(torch.cat([u, v, (u - v).abs(), u * v], dim=-1)))
        if self.content_head:
            self.aux = self.content_out(torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0])
        if self.content_dim:
            parts.append(content.to(parts[0].dtype))
        z = torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]
        for lin in self.tanh:
            z = torch.tanh(lin(z))
        return self.head(z).squeeze(-1)


# ------------------------------------------------------------------------------------------ input encoding
PAD, UNK = "<pad>", "<unk>"


class Vocab:
    def __init__(self, tokens: list[str]):
        self.itos = [PAD, UNK] + [t for t in tokens if t not in (PAD, UNK)]
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    @classmethod
    def build(cls, token_lists, min_count: int = 1) -> "Vocab":
        """Vocabulary of the tokens in ``token_lists`` (an iterable of token *lists*)."""
        c: Counter = Counter()
        for toks in token_lists:
            if isinstance(toks, str):  # a bare string would be counted character by character
                raise TypeError(f"Vocab.build takes token lists, got the string {toks!r}")
            c.update(toks)
        return cls(sorted(t for t, n in c.items() if n >= min_count))

    def encode(self, toks: list[str]) -> list[int]:
        return [self.stoi.get(t, 1) for t in toks] or [1]

    def __len__(self) -> int:
        return len(self.itos)

    def fingerprint(self) -> str:
        return hashlib.sha256("\n".join(self.itos).encode()).hexdigest()


def pad_batch(seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    lens = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    x = torch.zeros(len(seqs), int(lens.max()), dtype=torch.long)
    for j, s in enumerate(seqs):
        x[j, :len(s)] = torch.tensor(s, dtype=torch.long)
    return x, lens


def collate(items):
    """[(mr ids, output ids, rating), ...] -> the network's padded batch (``y``: the ratings); items of the
    sentence-encoder variants carry two more entries, the MR's and the output's sentence vectors
    (``mr_vec`` / ``out_vec``) or, for a fine-tuned encoder, their sub-word id lists (``mr_sub`` / ``out_sub``,
    padded, with their lengths); items of the cross-encoder carry one more entry, the pair's (ids, token types)
    arrays (``pair`` / ``pair_type`` / ``pair_len``). Items of a network with content features end with one more
    entry, the pair's content vector as a float32 ``torch.Tensor`` (no other entry is a tensor), stacked into
    ``content``."""
    cols = list(zip(*items))
    content = None
    if len(cols) > 3 and isinstance(cols[-1][0], torch.Tensor):
        content = torch.stack(list(cols.pop()))
    m, ml = pad_batch(list(cols[0]))
    o, ol = pad_batch(list(cols[1]))
    batch = {"mr": m, "mr_len": ml, "out": o, "out_len": ol, "y": torch.tensor(cols[2], dtype=torch.float32)}
    if len(cols) == 4:
        batch["pair"], batch["pair_len"] = pad_batch([p[0] for p in cols[3]])
        batch["pair_type"], _ = pad_batch([p[1] for p in cols[3]])
    if len(cols) == 5 and not isinstance(cols[3][0], np.ndarray):
        batch["mr_sub"], batch["mr_sub_len"] = pad_batch(list(cols[3]))
        batch["out_sub"], batch["out_sub_len"] = pad_batch(list(cols[4]))
    elif len(cols) == 5:
        batch["mr_vec"] = torch.as_tensor(np.stack(cols[3]), dtype=torch.float32)
        batch["out_vec"] = torch.as_tensor(np.stack(cols[4]), dtype=torch.float32)
    if content is not None:
        batch["content"] = content
    return batch


def net_inputs(batch: dict) -> tuple:
    """The positional arguments of :meth:`RatPredNet.forward` from a collated batch."""
    return (batch["mr"], batch["mr_len"], batch["out"], batch["out_len"], batch.get("mr_vec"), batch.get("out_vec"),
            batch.get("mr_sub"), batch.get("mr_sub_len"), batch.get("out_sub"), batch.get("out_sub_len"),
            batch.get("pair"), batch.get("pair_type"), batch.get("pair_len"), batch.get("content"))
