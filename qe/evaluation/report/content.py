"""The report's content-errors section (a part of :class:`qe.evaluation.report.ReportWriter`): per system, which MR
facts the outputs omit, state wrongly, add or repeat (:mod:`qe.evaluation.content`)."""
from __future__ import annotations

from qe.evaluation.report.tables import fnum, md_table


class ContentSections:
    """Content errors: the slot error rate per system, the attributes most often omitted / hallucinated, examples."""

    content = None  #: a :class:`qe.evaluation.content.ContentErrors`, or None (no record has an MR, or disabled)

    def content_section(self):
        ce = self.content
        if ce is None:
            return
        p = self.parts
        p.append("## Content errors\n")
        lex = ("rules only, `content.lexicon: none`" if ce.lexicon in (None, "none")
               else f"lexicon `{ce.lexicon}`")
        left = []
        if ce.no_mr:
            left.append(f"{ce.no_mr} record{'' if ce.no_mr == 1 else 's'} without an MR")
        if ce.bad_mr:
            left.append(f"{ce.bad_mr} whose MR does not parse (first: {ce.first_bad})")
        p.append("Which facts of its MR each output realises, from the `coverage` scorer's matcher "
                 f"({lex}; `qe.content`). Per system: outputs and checkable facts (values such as `dontcare` are not "
                 "checked), the **slot error rate** pooled over the outputs as the E2E papers report it: "
                 "(omitted + wrong + hallucinated + repeated) / facts, each count, and the attributes most often "
                 "omitted and hallucinated (count of facts / values). Lower is better. "
                 + (f"Left out: {'; '.join(left)}. " if left else "")
                 + "Every figure: `content_errors.csv`.\n")
        rows = [[r.system, int(r.outputs), int(r.facts), fnum(r.ser), int(r.omitted), int(r.wrong),
                 int(r.hallucinated), int(r.repeated), r.top_omitted or "—", r.top_hallucinated or "—"]
                for r in ce.table.itertuples()]
        p.append(md_table(["system", "outputs", "facts", "SER ↓", "omitted", "wrong", "hallucinated", "repeated",
                           f"most omitted (top {ce.top})", f"most hallucinated (top {ce.top})"], rows,
                          "lrrrrrrrll") + "\n")
        n_ex = max((len(v) for e in ce.examples.values() for v in e.values()), default=0)
        if not n_ex:
            return
        p.append("### Examples\n\nPer system, the first outputs in record order that omit a fact and that state "
                 "a value the MR does not hold (output and MR cut at 160 characters).\n")
        for system, e in ce.examples.items():
            for kind, col in (("omitted", "omits"), ("hallucinated", "hallucinates")):
                if not e[kind]:
                    continue
                p.append(f"**{system}, {kind}**\n\n" + md_table(
                    ["record", col, "output", "MR"],
                    [[x["id"], x["what"], x["output"], x["mr"]] for x in e[kind]], "llll") + "\n")
