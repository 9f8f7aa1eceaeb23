"""Content checks: which input facts an output realises (:mod:`qe.content.align`), value lexicons mined from data
(:mod:`qe.content.lexicon`), and the referenceless ``coverage`` scorer (:mod:`qe.content.scorer`)."""
from qe.content.align import Alignment, Matcher, Verdict
from qe.content.lexicon import Lexicon
from qe.content.mining import mine

__all__ = ["Alignment", "Matcher", "Verdict", "Lexicon", "mine"]
