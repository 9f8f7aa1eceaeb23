"""The zoo's rebuild check of the content aligner: the test recipe ``_tiny-content-aligner`` (a random tiny BERT on the
shipped sample rows, seconds) is rebuilt from this checkout and verified against its published fingerprint
(qe/resources/fingerprints/_tiny-content-aligner.json). The aligner's training labels are vetoed by the matcher and
its probe scores go through the matcher, so a change to the matcher makes this test fail: a deliberate change
republishes the file (docs/results/zoo.md, "The rebuild check") and rebuilds content-aligner-e2e / -webnlg."""
from __future__ import annotations

import pytest

from qe.zoo import build as zoo

NAME = "_tiny-content-aligner"


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory):
    models = tmp_path_factory.mktemp("models")
    mp = pytest.MonkeyPatch()
    mp.setenv("QE_MODELS", str(models))  # the tiny encoder is made under <models>/.cache/encoders
    try:
        zoo.build(NAME, models, quiet=True)
        yield models
    finally:
        mp.undo()


def test_a_content_aligner_rebuilt_from_this_checkout_matches_its_published_build(rebuilt, capsys):
    assert zoo.published_fingerprint(NAME) is not None
    rc = zoo.verify([NAME], rebuilt, against="published", live=True)
    out = capsys.readouterr().out
    assert rc == 0, ("the content aligner's rebuild check failed: the matcher (or the aligner's training) changed what "
                     "it decides. If that is meant, republish qe/resources/fingerprints/_tiny-content-aligner.json "
                     "(docs/results/zoo.md, 'The rebuild check') and rebuild the content-aligner models.\n" + out)
    assert "scored now" in out or "equivalent" in out


def test_a_matcher_change_shows_up_even_when_the_bits_are_the_same(rebuilt, capsys, monkeypatch):
    """The export's files are unchanged; a matcher that no longer finds areas scores the probes otherwise, and the
    live verify says so (without --live the same bits would be bit-identical, nothing scored)."""
    from qe.content.align import Matcher

    real = Matcher.align

    def blind_to_areas(self, mr, output, where="<mr>"):
        a = real(self, mr, output, where)
        for v in a.verdicts:
            if v.slot == "area" and v.status == "realised":
                v.status = "omitted"
        return a

    monkeypatch.setattr(Matcher, "align", blind_to_areas)
    assert zoo.verify([NAME], rebuilt, against="published") == 0  # the bits alone: nothing is scored
    assert capsys.readouterr().out.startswith(f"{NAME}: bit-identical")
    assert zoo.verify([NAME], rebuilt, against="published", live=True) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{NAME}: different from the published build")
    assert "the code around the model changed" in out and "probe " in out  # the probes that moved are listed
