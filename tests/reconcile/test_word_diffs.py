"""Word diffs are computed once per pair of texts and stored (reconcile/diffs.py, issue 14)."""
import pytest

from reconcile import diffs
from reconcile.models import WordDiff
from reconcile.diffs import key, stored_diffs
from tests.reconcile.page_factories import build_reconcile_run

pytestmark = pytest.mark.django_db


def counting(calls):
    def compute(old, new):
        calls.append((old, new))
        left = "".join(f"<del>{t}</del>" if op == diffs.DELETE else t
                       for op, t in diffs.diff_words(old, new) if op != diffs.INSERT)
        right = "".join(f"<ins>{t}</ins>" if op == diffs.INSERT else t
                        for op, t in diffs.diff_words(old, new) if op != diffs.DELETE)
        return left, right
    return compute


def test_a_pair_is_computed_once_and_read_back_afterwards():
    calls = []
    pairs = [("the old words", "the new words"), ("same", "same")]
    first = stored_diffs(pairs, counting(calls))
    again = stored_diffs(pairs + [("a", "b")], counting(calls))
    assert calls == pairs + [("a", "b")]  # the second call computed only the new pair
    assert first[pairs[0]] == again[pairs[0]] == ("the <del>old</del> words", "the <ins>new</ins> words")
    assert WordDiff.objects.get(key=key(*pairs[0])).left == "the <del>old</del> words"


def test_a_new_text_is_a_new_key():
    assert key("a", "b") != key("a", "c") != key("ab", "") and key("a\x00", "b") != key("a", "\x00b")


def test_the_page_stores_the_diffs_of_the_rows_it_shows_and_reuses_them(client, reviewer):
    client.force_login(reviewer.user)
    run, member = build_reconcile_run(records=100, run_id="AAS-2026-09-25-diffs-01")
    url = f"/runs/{run.run_id}/reconcile/?member={member}"
    client.get(url)
    stored = WordDiff.objects.count()
    assert stored > 0
    created = set(WordDiff.objects.values_list("created_at", flat=True))
    client.get(url)
    assert WordDiff.objects.count() == stored
    assert set(WordDiff.objects.values_list("created_at", flat=True)) == created
