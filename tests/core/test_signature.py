"""Signatures are built from declared fields (qe.core.signature), never written by hand."""
import copy
import json

import qe
from qe.core.scorer import Scorer
from qe.core.signature import Signature, library_version


class _Toy(Scorer):
    name = "toy"
    signature_libraries = ("numpy",)

    def __init__(self, window=5, lowercase=True, extra=None):
        self.window, self.lowercase, self.extra = window, lowercase, extra

    def signature_fields(self):
        return {"window": self.window, "lc": self.lowercase, "extra": self.extra, "w": 0.25}

    def _score(self, outputs, **kw):
        return [0.0] * len(outputs)


def test_formatting_rules_and_parts():
    sig = _Toy().signature
    assert sig == f"toy|window:5|lc:yes|w:0.25|qe:{qe.__version__}|numpy:{library_version('numpy')}"
    assert sig.name == "toy" and sig.fields == {"window": 5, "lc": True, "w": 0.25}  # None left out
    assert list(sig.versions) == ["qe", "numpy"]
    assert json.loads(json.dumps({"s": sig}))["s"] == str(sig)  # a str wherever a string goes
    clone = copy.deepcopy(sig)  # goes through __reduce__, as multiprocessing does
    assert clone == sig and clone.fields == sig.fields and clone.versions == sig.versions


def test_nesting_and_extra_fields_keep_versions_last():
    inner = Signature("ROUGE-L", {"mode": "max"}, {"qe": "0.1.0"})
    outer = Signature("combo", {"rouge": inner}, {"qe": "0.1.0"})
    assert outer == "combo|rouge:[ROUGE-L|mode:max|qe:0.1.0]|qe:0.1.0"
    assert outer.as_dict()["fields"]["rouge"]["name"] == "ROUGE-L"
    assert outer.with_fields(bs=1000, seed=1) == "combo|rouge:[ROUGE-L|mode:max|qe:0.1.0]|bs:1000|seed:1|qe:0.1.0"
    assert Signature.of("old|hand|written").with_fields(n=3) == "old|hand|written|n:3"


def test_every_registered_reference_metric_builds_its_signature():
    for name in ["bleu", "chrf", "ter", "rouge-l", "rouge-w", "meteor", "cider-d", "nist", "length"]:
        sig = qe.load(name).signature
        assert isinstance(sig, Signature) and "|" not in sig.name and "qe" in sig.versions, name
