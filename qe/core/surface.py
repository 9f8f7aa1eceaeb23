"""Surface forms of MR values: how slot values and RDF entities are usually written in text.

Shared by every part that looks for an MR's values in an output: RatPred's delexicalisation
(:mod:`qe.ratpred.mr`) and the content aligner (:mod:`qe.content`). Everything works on lower-cased word tokens
(:func:`tokenize`, i.e. :func:`qe.core.tokenization.word_tokenize`).

* :func:`norm_slot`, :func:`property_words`, :func:`entity_text`: slot names, RDF properties and entities as text;
* :func:`value_variants` (E2E prices and ratings) and :func:`entity_variants` (RDF entities): the usual other
  spellings of a value, as token lists;
* :func:`find_all`, :func:`find_approx`, :func:`tok_close`: where a token sequence occurs in an output, verbatim or
  as a near-variant (``hotels`` for ``hotel``, ``citycentre`` for ``city centre``).
"""
from __future__ import annotations

import re

from qe.core.tokenization import word_tokenize


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens."""
    return word_tokenize(text, lowercase=True)


def norm_slot(slot: str) -> str:
    """Lower case, ``_`` and white space removed (``price_range`` / ``priceRange`` / ``price range``)."""
    return re.sub(r"\s+", "", slot.lower().replace("_", ""))



def property_words(prop: str) -> str:
    """An RDF property as lower-cased words: ``birthPlace`` -> ``birth place``, ``ISBN_number`` -> ``isbn number``,
    ``elevationAboveTheSeaLevel_(in_metres)`` -> ``elevation above the sea level (in metres)``."""
    t = prop.replace("_", " ")
    t = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", t)
    t = re.sub(r"(?<=[A-Z])(?=[A-Z][a-z])", " ", t)
    return " ".join(t.lower().split())


def entity_text(value: str) -> str:
    """An RDF subject / object as text: underscores as spaces, double quotes removed, a space before ``(``, lower
    case, white space squeezed (``Alan_Bean`` -> ``alan bean``, ``"52.0"(minutes)`` -> ``52.0 (minutes)``)."""
    t = value.replace("_", " ").replace('"', " ").replace("(", " (")
    return " ".join(t.lower().split())


_MONTHS = "january february march april may june july august september october november december".split()
_ISO_DATE = re.compile(r"^(\d{3,4})-(\d\d)-(\d\d)$")
#: a last word that texts often leave out of an entity's name
_GENERIC_HEADS = frozenset({"language", "music", "cuisine", "people"})
_ORDINAL = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}


def entity_variants(text: str) -> list[list[str]]:
    """Usual surface forms (token lists) of an entity text (:func:`entity_text`), tried when it is not found verbatim
    or approximately (module docstring): without parentheses (``isis (band)`` -> ``isis``, ``185.0 (centimetres)`` ->
    ``185.0``), a whole number without ``.0`` (``185``), the part before the first comma (``wheeler, texas`` ->
    ``wheeler``), an ISO date written out (``1932-03-15`` -> ``15 march 1932``, ``march 15 , 1932``, ``15th of march
    1932``, ``march 1932``, ...), without a generic last word (``german language`` -> ``german``, ``folk music`` ->
    ``folk``)."""
    out: list[str] = []
    bare = " ".join(re.sub(r"\([^()]*\)", " ", text).split())
    if bare and bare != text:
        out.append(bare)
    for t in [text, bare]:
        if re.fullmatch(r"-?\d+\.0+", t):
            out.append(t.split(".")[0])
    if "," in bare and bare.split(",")[0].strip():
        out.append(bare.split(",")[0].strip())
    m = _ISO_DATE.match(text)
    if m and 1 <= int(m.group(2)) <= 12 and 1 <= int(m.group(3)) <= 31:
        y, mo, d = m.group(1), _MONTHS[int(m.group(2)) - 1], int(m.group(3))
        th = f"{d}{_ORDINAL.get(d, 'th')}"
        out += [f"{d} {mo} {y}", f"{mo} {d}, {y}", f"{th} {mo} {y}", f"{th} of {mo} {y}", f"{th} of {mo}, {y}",
                f"{mo} {th}, {y}", f"{mo} {th} {y}", f"{d} {mo}, {y}", f"{mo} {d} {y}", f"{mo} {y}"]
    words = bare.split()
    if len(words) > 1 and words[-1] in _GENERIC_HEADS:  # "german language" -> "german", "folk music" -> "folk"
        out.append(" ".join(words[:-1]))
    return new_token_variants(text, out)


def tok_close(a: str, b: str) -> bool:
    """One token a near-variant of the other (``hotel`` / ``hotels``, ``moderate`` / ``moderately``):
    one contains the other and their lengths differ by at most 2 (the rule of the authors' fuzzy matcher,
    here only for tokens of 3+ characters)."""
    if a == b:
        return True
    return min(len(a), len(b)) >= 3 and abs(len(a) - len(b)) <= 2 and (a in b or b in a)


_PRICE = re.compile(r"^(less than |more than |under |over )?£(\d+)(?:\s*-\s*£?(\d+))?$")
_RATING = re.compile(r"^(\d) out of (\d)$")
NUMBER_WORDS = dict(zip("0123456789", "zero one two three four five six seven eight nine".split()))


def value_variants(value: str) -> list[list[str]]:
    """Usual surface forms (token lists) of E2E price and rating values, tried when the value is not found
    verbatim or approximately: ``£20-25`` -> ``20-25``, ``£20 - £25``, ``20 to 25``, ...; ``less than £20`` ->
    ``less than 20``, ``under £20``, ...; ``5 out of 5`` -> ``5 stars``, ``five-star``, ``five out of five``;
    ``city centre`` -> ``city center``. Other values (every EMNLP17 value) have none."""
    out: list[str] = []
    m = _PRICE.match(value)
    if m:
        qual, a, b = m.group(1) or "", m.group(2), m.group(3)
        if b:
            out += [f"{a}-{b}", f"£{a} - £{b}", f"{a} - {b}", f"£{a} to £{b}", f"£{a} to {b}", f"{a} to {b}",
                    f"£{a}-£{b}"]
        else:
            alt = {"less than ": ["under ", "below "], "more than ": ["over ", "above "], "under ": ["less than "],
                   "over ": ["more than "]}.get(qual, [])
            out += [f"{q}{c}{a}" for q in [qual, *alt] for c in ("", "£")]
    m = _RATING.match(value)
    if m:
        b = m.group(2)
        for a in (m.group(1), NUMBER_WORDS.get(m.group(1), m.group(1))):
            out += [f"{a} out of {b}", f"{a} stars", f"{a} star", f"{a}-star", f"{a} out of {b} stars", f"{a}/{b}",
                    f"{a} out of {NUMBER_WORDS.get(b, b)}"]
    if value == "city centre":  # E2E's value; the outputs often spell it the American way
        out.append("city center")
    return new_token_variants(value, out)


#: prefixes that turn a word into its opposite (``expensive`` / ``inexpensive``, ``friendly`` / ``unfriendly``)
NEGATING_PREFIXES = ("in", "un", "im", "il", "ir", "non", "dis")


def tok_close_strict(a: str, b: str) -> bool:
    """:func:`tok_close` without the near-variants that change what is said: tokens with a digit match only
    exactly (``182`` is not ``1820``), and a token is not a near-variant of itself behind a negating prefix
    (``inexpensive`` is not ``expensive``)."""
    if a == b:
        return True
    if any(c.isdigit() for c in a + b):
        return False
    short, long_ = sorted((a, b), key=len)
    if any(long_ == p + short or long_ == p + "-" + short for p in NEGATING_PREFIXES):
        return False
    return tok_close(a, b)


def find_approx(tokens: list[str], sub: list[str], used: list[bool], strict: bool = False) -> tuple[int, int]:
    """First unused span of ``tokens`` that approximately spells ``sub``: token by token near-variants
    (:func:`tok_close`; ``strict``: :func:`tok_close_strict`, no numbers, no negated forms), or the same characters
    with spaces moved (``citycentre`` / ``city centre``). Returns (start, end) or (-1, -1)."""
    n = len(sub)
    joined = "".join(sub)
    close = tok_close_strict if strict else tok_close
    for i in range(len(tokens)):
        if used[i]:
            continue
        if i + n <= len(tokens) and not any(used[i:i + n]) and \
                all(close(t, v) for t, v in zip(tokens[i:i + n], sub)):
            return i, i + n
        acc = ""
        for j in range(i, min(len(tokens), i + n + 2)):
            if used[j]:
                break
            acc += tokens[j]
            if acc == joined:
                return i, j + 1
            if not joined.startswith(acc):
                break
    return -1, -1


def find_all(tokens: list[str], sub: list[str], used: list[bool]) -> list[int]:
    """Every unused, non-overlapping occurrence of ``sub`` (left to right)."""
    starts, n, i = [], len(sub), 0
    while n and i <= len(tokens) - n:
        if tokens[i:i + n] == sub and not any(used[i:i + n]):
            starts.append(i)
            i += n
        else:
            i += 1
    return starts


def new_token_variants(original: str, variants: list[str]) -> list[list[str]]:
    """The tokenised ``variants``, each once, without the original's own tokenisation or empty ones."""
    seen, res = {" ".join(tokenize(original))}, []
    for o in variants:
        t = tokenize(o)
        if t and " ".join(t) not in seen:
            seen.add(" ".join(t))
            res.append(t)
    return res


__all__ = ["tokenize", "norm_slot", "property_words", "entity_text", "entity_variants", "value_variants", "tok_close",
           "tok_close_strict", "NEGATING_PREFIXES",
           "find_approx", "find_all", "new_token_variants", "NUMBER_WORDS"]
