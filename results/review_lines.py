"""The Semantic verification lines of a result whose run took independent reviews (DESIGN §7):
every pass and its reviewer, the agreement figures, and each adjudication with its adjudicator."""
from __future__ import annotations

from typing import Any


def _figure(value) -> str:
    return "undefined" if value is None else f"{value}"


def _agreement_line(name: str, f: dict[str, Any]) -> str:
    kappa = f" Cohen's kappa {_figure(f['cohens_kappa'])}," if "cohens_kappa" in f else ""
    return (f"- {name}: {f['agreements']} of {f['items']} items decided alike ({_figure(f['percent_agreement'])}%),"
            f"{kappa} Krippendorff's alpha (nominal) {_figure(f['krippendorffs_alpha'])}")


def independent_review_blocks(reviews: dict[str, Any] | None, one_line) -> list[str]:
    """Markdown blocks, in order; none for a run that took one review. `one_line` flattens a text."""
    if not reviews:
        return []
    passes = reviews["passes"]
    blocks = [f"Independent reviews: {reviews['reviews_required']} required, {len(passes)} submitted, each blind "
              "to the others until submitted; where they agreed their decisions are the run's (consensus).",
              "\n".join(f"- Pass {p['pass']} by {p['reviewer']}, submitted at {p['submitted_at']}: "
                        f"{p['decisions']} decisions" for p in passes)]
    figures = reviews["agreement"]
    if figures.get("overall"):
        lines = [_agreement_line(f["name"], f) for _kind, f in sorted(figures["kinds"].items())]
        lines.append(_agreement_line("overall", figures["overall"]))
        blocks.append("Agreement between the reviews:\n\n" + "\n".join(lines))
    adjudications = reviews["adjudications"]
    if adjudications:
        lines = []
        for a in adjudications:
            sides = "; ".join(f"pass {d['pass']} ({d['reviewer']}) {d['state']}"
                              + (f" → {d['target']}" if d.get("target") else "")
                              + (f": {one_line(d['rationale'])}" if d.get("rationale") else "") for d in a["passes"])
            lines.append(f"- {one_line(a['item'])}: {sides}. Settled by {a['adjudicator']}: {a['decision']}, "
                         f"{one_line(a['rationale'])}")
        blocks.append("Adjudications of the conflicts between the reviews:\n\n" + "\n".join(lines))
    else:
        blocks.append("The reviews agreed on every item: nothing was adjudicated.")
    return blocks
