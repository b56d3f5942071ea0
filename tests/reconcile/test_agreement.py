"""The agreement figures against worked examples with published values (issue 21 item 4)."""
from __future__ import annotations

from reconcile.passes.agreement import _figures


def test_cohens_kappa_matches_the_textbook_example():
    # 50 items, two raters: 20 both yes, 5 yes/no, 10 no/yes, 15 both no: p_o = 0.7, p_e = 0.5, kappa = 0.4.
    columns = [["yes", "yes"]] * 20 + [["yes", "no"]] * 5 + [["no", "yes"]] * 10 + [["no", "no"]] * 15
    figures = _figures(columns)
    assert figures["items"] == 50 and figures["agreements"] == 35
    assert figures["percent_agreement"] == 70.0
    assert figures["cohens_kappa"] == 0.4


def test_krippendorffs_alpha_matches_krippendorffs_binary_example():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", two observers, ten units: alpha = 0.095.
    a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    figures = _figures([[str(x), str(y)] for x, y in zip(a, b)])
    assert figures["krippendorffs_alpha"] == 0.095


def test_alpha_for_three_reviewers_and_no_kappa():
    columns = [["accepted"] * 3] * 6 + [["accepted", "accepted", "rejected"]] * 2 + [["rejected"] * 3] * 4
    figures = _figures(columns)
    assert figures["cohens_kappa"] is None  # Cohen's kappa is for two raters
    assert 0 < figures["krippendorffs_alpha"] < 1
    assert figures["agreements"] == 10


def test_one_category_only_leaves_the_chance_corrected_figures_undefined():
    figures = _figures([["accepted", "accepted"]] * 5)
    assert figures["percent_agreement"] == 100.0
    assert figures["cohens_kappa"] is None and figures["krippendorffs_alpha"] is None
