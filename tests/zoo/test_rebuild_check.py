"""The zoo's rebuild check of the content aligner: the test recipes ``_tiny-content-aligner`` (a random tiny BERT on
the shipped E2E-style sample rows, probed with E2E attribute lists and dialogue acts) and
``_tiny-content-aligner-triples`` (the same on the shipped WebNLG-style triple rows, probed with RDF triples) are
rebuilt from this checkout, seconds each, and verified against their published fingerprints
(qe/resources/fingerprints/). The aligner's training labels are vetoed by the matcher and its probe scores go through
the matcher, so a change to the matcher (its attribute-list rules or its triple rules) makes this test fail: a
deliberate change republishes the file (docs/results/zoo.md, "The rebuild check") and rebuilds the content-aligner
models.

A trained model's bits are not the same across CPUs, so the comparison with the *published* build runs only on a CPU
of the identity the fingerprint records (:func:`qe.zoo.fingerprint.cpu_identity`). What holds on any machine: the
mechanism, checked against a fingerprint made here from this rebuild, and the matcher's own verdicts on the probe
sets against their published record (``qe/resources/probes/matcher_verdicts.json``, :mod:`qe.zoo.matcher_probes`)."""
from __future__ import annotations

import json

import pytest

from qe.zoo import build as zoo
from qe.zoo import fingerprint as fpm

NAMES = ("_tiny-content-aligner", "_tiny-content-aligner-triples")


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory):
    models = tmp_path_factory.mktemp("models")
    mp = pytest.MonkeyPatch()
    mp.setenv("QE_MODELS", str(models))  # the tiny encoder is made under <models>/.cache/encoders
    try:
        for name in NAMES:
            zoo.build(name, models, quiet=True)
        yield models
    finally:
        mp.undo()


def _blind_to_areas(monkeypatch) -> None:
    """A matcher change for the checks to catch: it no longer finds areas."""
    from qe.content.align import Matcher

    real = Matcher.align

    def blind(self, mr, output, where="<mr>"):
        a = real(self, mr, output, where)
        for v in a.verdicts:
            if v.slot == "area" and v.status == "realised":
                v.status = "omitted"
        return a

    monkeypatch.setattr(Matcher, "align", blind)


@pytest.fixture(scope="module")
def local_fingerprints(rebuilt, tmp_path_factory):
    """Each rebuild's fingerprint, computed here: the reference for the checks that must hold on any CPU."""
    out = tmp_path_factory.mktemp("fingerprints")
    for name in NAMES:
        assert zoo.fingerprint(name, rebuilt, out=str(out / f"{name}.json"), live=True) == 0
    return out


@pytest.mark.parametrize("name", NAMES)
def test_a_content_aligner_rebuilt_from_this_checkout_matches_its_published_build(rebuilt, capsys, name):
    assert zoo.published_fingerprint(name) is not None
    published = json.loads(zoo.published_fingerprint(name).read_text(encoding="utf-8"))["fingerprint"]
    if not fpm.same_cpu(published):
        pytest.skip(f"{name} was published on {published.get('cpu') or 'a CPU it does not record'}; this machine is "
                    f"{fpm.cpu_identity()}: a trained model's bits differ across CPUs (the matcher's verdicts are "
                    "checked on every machine by test_the_matchers_probe_verdicts_are_the_published_ones)")
    rc = zoo.verify([name], rebuilt, against="published", live=True)
    out = capsys.readouterr().out
    assert rc == 0, ("the content aligner's rebuild check failed: the matcher (or the aligner's training) changed what "
                     f"it decides. If that is meant, republish qe/resources/fingerprints/{name}.json "
                     "(docs/results/zoo.md, 'The rebuild check') and rebuild the content-aligner models.\n" + out)
    assert "scored now" in out or "equivalent" in out


@pytest.mark.parametrize("name, probes", [("_tiny-content-aligner", "mr_outputs"),
                                          ("_tiny-content-aligner-triples", "mr_triples")])
def test_each_recipe_is_probed_in_its_own_mr_format(rebuilt, name, probes):
    import json

    published = json.loads(zoo.published_fingerprint(name).read_text(encoding="utf-8"))
    assert published["fingerprint"]["probe_set"] == probes


def test_a_matcher_change_shows_up_even_when_the_bits_are_the_same(rebuilt, local_fingerprints, capsys, monkeypatch):
    """The export's files are unchanged; a matcher that no longer finds areas scores the probes otherwise, and the
    live verify says so (without --live the same bits would be bit-identical, nothing scored)."""
    _blind_to_areas(monkeypatch)
    name = "_tiny-content-aligner"
    here = str(local_fingerprints / f"{name}.json")
    assert zoo.verify([name], rebuilt, against=here) == 0  # the bits alone: nothing is scored
    assert capsys.readouterr().out.startswith(f"{name}: bit-identical")
    assert zoo.verify([name], rebuilt, against=here, live=True) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{name}: different from {here}")
    assert "the code around the model changed" in out and "probe " in out  # the probes that moved are listed


def test_a_change_to_the_triple_rules_alone_shows_up_in_the_triple_check_only(rebuilt, local_fingerprints, capsys,
                                                                            monkeypatch):
    """A triple-only matcher change (a wrong object read as realised again, the error the relation-aware rules
    fixed) leaves the attribute-list check equivalent and makes the triple check fail, naming a probe whose object
    is wrong."""
    from qe.content.align import Matcher

    real = Matcher._align_triples

    def wrong_reads_as_realised(self, facts, output):
        a = real(self, facts, output)
        for v in a.verdicts:
            if v.status == "wrong":
                v.status = "realised"
        return a

    monkeypatch.setattr(Matcher, "_align_triples", wrong_reads_as_realised)
    here = {n: str(local_fingerprints / f"{n}.json") for n in NAMES}
    assert zoo.verify(["_tiny-content-aligner"], rebuilt, against=here["_tiny-content-aligner"], live=True) == 0
    capsys.readouterr()
    assert zoo.verify(["_tiny-content-aligner-triples"], rebuilt, against=here["_tiny-content-aligner-triples"],
                      live=True) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"_tiny-content-aligner-triples: different from {here['_tiny-content-aligner-triples']}")
    assert "Marta Velasquez was born in Madrid in 1975." in out  # birthPlace Tarragona: a wrong object


@pytest.fixture(scope="module")
def matcher_now():
    """The matcher's probe record from this checkout (scored once for the module's tests)."""
    from qe.zoo import matcher_probes as probes

    return probes.snapshot()


def test_the_matchers_probe_verdicts_are_the_published_ones(matcher_now):
    """The matcher's decisions on both probe sets, with the shipped lexicons and with the rules alone, equal their
    published record on any machine (no trained model involved). A deliberate matcher change regenerates the record:
    ``python -m qe.zoo.matcher_probes -o qe/resources/probes/matcher_verdicts.json``."""
    from qe.zoo import matcher_probes as probes

    published = json.loads(probes.published_path().read_text(encoding="utf-8"))
    if published.get("parser") != matcher_now["parser"]:
        pytest.skip(f"the record was made with the parser {published.get('parser')}, this machine has "
                    f"{matcher_now['parser']}: a value word in doubt may be attached otherwise")
    diff = probes.differences(published, matcher_now)
    assert not diff, ("the matcher decides the probes otherwise than its published record; if that is meant, "
                      "regenerate it (python -m qe.zoo.matcher_probes -o qe/resources/probes/matcher_verdicts.json)"
                      " and republish the tiny aligners' fingerprints (docs/results/zoo.md)\n" + "\n".join(diff))


def test_the_matcher_probe_check_names_the_probe_that_moved(matcher_now, monkeypatch):
    from qe.zoo import matcher_probes as probes

    _blind_to_areas(monkeypatch)
    diff = probes.differences(matcher_now, probes.snapshot())
    assert diff and any("/ mr_outputs / mr-01:" in line and "area" in line for line in diff)
