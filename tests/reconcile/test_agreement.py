"""The agreement figures against worked examples with published values (issue 21 item 4)."""
from __future__ import annotations

from collections import Counter
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from reconcile.passes.agreement import figures_of, cohens_kappa


def testcohens_kappa_matches_the_textbook_example():
    # 50 items, two raters: 20 both yes, 5 yes/no, 10 no/yes, 15 both no: p_o = 0.7, p_e = 0.5, kappa = 0.4.
    columns = [["yes", "yes"]] * 20 + [["yes", "no"]] * 5 + [["no", "yes"]] * 10 + [["no", "no"]] * 15
    figures = figures_of(columns)
    assert figures["items"] == 50 and figures["agreements"] == 35
    assert figures["percent_agreement"] == 70.0
    assert figures["cohens_kappa"] == 0.4


def testcohens_kappa_matches_the_same_percent_agreement_examples():
    # Wikipedia, "Cohen's kappa", same percentages but different numbers: 100 items, p_o = 0.6 both times;
    # 45/15/25/15 gives p_e = 0.54, kappa = 0.1304; 25/35/5/35 gives p_e = 0.46, kappa = 0.2593.
    first = [["yes", "yes"]] * 45 + [["yes", "no"]] * 15 + [["no", "yes"]] * 25 + [["no", "no"]] * 15
    second = [["yes", "yes"]] * 25 + [["yes", "no"]] * 35 + [["no", "yes"]] * 5 + [["no", "no"]] * 35
    assert figures_of(first)["percent_agreement"] == figures_of(second)["percent_agreement"] == 60.0
    assert figures_of(first)["cohens_kappa"] == 0.13 and figures_of(second)["cohens_kappa"] == 0.259


def _kappa_from_the_table(pairs: list[tuple[str, str]]) -> Fraction | None:
    """Cohen (1960), exactly: (p_o - p_e) / (1 - p_e) from the two raters' table of counts."""
    n = len(pairs)
    table = Counter(pairs)
    values = {value for pair in pairs for value in pair}
    p_o = Fraction(sum(table[v, v] for v in values), n)
    p_e = sum(Fraction(sum(table[v, w] for w in values), n) * Fraction(sum(table[w, v] for w in values), n)
              for v in values)
    return None if p_e == 1 else (p_o - p_e) / (1 - p_e)


@given(st.lists(st.tuples(st.sampled_from("abcde"), st.sampled_from("abcde")), min_size=1, max_size=200))
def testcohens_kappa_is_the_textbook_formula(pairs):
    kappa, exact = cohens_kappa([a for a, _ in pairs], [b for _, b in pairs]), _kappa_from_the_table(pairs)
    assert (kappa is None) == (exact is None)
    if exact is not None:
        assert abs(kappa - exact) < 1e-12


def test_krippendorffs_alpha_matches_krippendorffs_binary_example():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", two observers, ten units: alpha = 0.095.
    a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    figures = figures_of([[str(x), str(y)] for x, y in zip(a, b)])
    assert figures["krippendorffs_alpha"] == 0.095


def test_alpha_for_three_reviewers_and_no_kappa():
    columns = [["accepted"] * 3] * 6 + [["accepted", "accepted", "rejected"]] * 2 + [["rejected"] * 3] * 4
    figures = figures_of(columns)
    assert figures["cohens_kappa"] is None  # Cohen's kappa is for two raters
    assert 0 < figures["krippendorffs_alpha"] < 1
    assert figures["agreements"] == 10


def test_one_category_only_leaves_the_chance_corrected_figures_undefined():
    figures = figures_of([["accepted", "accepted"]] * 5)
    assert figures["percent_agreement"] == 100.0
    assert figures["cohens_kappa"] is None and figures["krippendorffs_alpha"] is None
