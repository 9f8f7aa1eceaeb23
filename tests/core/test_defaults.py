"""One default per hyperparameter: each is written once, in its packaged YAML (``qe/conf``); the networks and
LightningModules take their signature defaults from there (:func:`qe.core.config.conf_defaults`), so a model built
in Python with defaults is the model ``python train.py`` builds."""
from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

from qe.core.config import conf_defaults

#: (class path, the config layers its defaults come from)
CLASSES = [
    ("qe.lm.model:LSTMLM", ("model/lstm_lm",)),
    ("qe.lm.task:LanguageModelModule", ("model/lstm_lm",)),
    ("qe.ratpred.model:RatPredNet", ("model/ratpred_gru",)),
    ("qe.ratpred.module:RatPredModule", ("model/ratpred_gru",)),
    ("qe.gruen.task:CoLAModule", ("model/hf_encoder", "task/cola:model")),
    ("qe.gruen.task:SOPModule", ("model/hf_encoder", "task/sop:model")),
    ("qe.gruen.task:MaskedLMModule", ("model/hf_encoder", "task/mlm:model")),
]


def _cls(path: str):
    import importlib

    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def _literal_defaults(cls) -> dict[str, object]:
    """Parameters of ``cls.__init__`` whose default is written as a literal in the source."""
    src = textwrap.dedent(inspect.getsource(cls.__init__))
    fn = ast.parse(src).body[0]
    args = fn.args.args[-len(fn.args.defaults):] if fn.args.defaults else []
    pairs = list(zip(args, fn.args.defaults)) + list(zip(fn.args.kwonlyargs, fn.args.kw_defaults))
    return {a.arg: ast.literal_eval(d) for a, d in pairs
            if d is not None and isinstance(d, (ast.Constant, ast.Tuple, ast.List, ast.UnaryOp))}


@pytest.mark.parametrize("path, layers", CLASSES, ids=[c for c, _ in CLASSES])
def test_signature_defaults_are_the_configs(path, layers):
    cls = _cls(path)
    conf = conf_defaults(*layers)
    params = inspect.signature(cls.__init__).parameters
    shared = [k for k in params if k in conf]
    assert shared, f"{path}: no parameter is configured in {layers}"
    for k in shared:
        assert params[k].default == conf[k], f"{path}({k}=...) defaults to {params[k].default!r}, the config to {conf[k]!r}"
    # the default is read from the config, not written a second time
    assert not (set(_literal_defaults(cls)) & set(conf)), \
        f"{path}: literal defaults {sorted(set(_literal_defaults(cls)) & set(conf))} duplicate {layers}"


def test_a_duplicated_literal_default_is_caught():
    class Planted:
        def __init__(self, vocab_size: int, hidden_size: int = 512, pad_id: int = 0):
            pass

    assert _literal_defaults(Planted) == {"hidden_size": 512, "pad_id": 0}


def test_layers_merge_later_over_earlier():
    base, mlm = conf_defaults("model/hf_encoder"), conf_defaults("model/hf_encoder", "task/mlm:model")
    assert base["train_layers"] == -1 and mlm["train_layers"] == 2 and mlm["weight_decay"] == base["weight_decay"]
    assert "_target_" not in mlm and "defaults" not in conf_defaults("model/minilm")


def test_python_defaults_build_the_configured_model():
    from qe.lm.model import LSTMLM

    conf = conf_defaults("model/lstm_lm")
    m = LSTMLM(vocab_size=50)
    assert m.lstm.hidden_size == conf["hidden_size"] and m.lstm.num_layers == conf["num_layers"]
