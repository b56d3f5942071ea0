"""Word-level diffs are pure: no database."""
from hypothesis import given, strategies as st

from reconcile.diffs import DELETE, EQUAL, INSERT, diff_words, similarity, tokens


def _old(ops):
    return "".join(text for op, text in ops if op in (EQUAL, DELETE))


def _new(ops):
    return "".join(text for op, text in ops if op in (EQUAL, INSERT))


def test_it_marks_a_changed_word_as_a_deletion_and_an_insertion():
    assert diff_words("the cache is local", "the cache is remote") == [
        (EQUAL, "the cache is "), (DELETE, "local"), (INSERT, "remote")]


def test_identical_texts_are_one_equal_token():
    assert diff_words("same text", "same text") == [(EQUAL, "same text")]


def test_an_empty_side_is_all_insert_or_all_delete():
    assert diff_words("", "new words") == [(INSERT, "new words")]
    assert diff_words("old words", "") == [(DELETE, "old words")]


def test_punctuation_and_markup_are_their_own_tokens():
    assert tokens("`RT-OBJ-1` <b>") == ["`", "RT", "-", "OBJ", "-", "1", "`", " ", "<", "b", ">"]


def test_similarity_is_one_for_equal_texts_and_lower_for_different_ones():
    assert similarity("a b c", "a b c") == 1.0
    assert similarity("a b c", "x y z") < 0.5


@given(st.text(max_size=80), st.text(max_size=80))
def test_the_tokens_give_back_both_texts_exactly(old, new):
    ops = diff_words(old, new)
    assert _old(ops) == old
    assert _new(ops) == new
    assert all(text for _op, text in ops)
