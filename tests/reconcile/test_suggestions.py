"""Suggestion scoring is pure: no database."""
from reconcile.suggestions import SAME_THRESHOLD, Candidate, Source, id_evidence, ratio, score, suggest, words

STORE = Candidate("RT-OBJ-store", "OBJ", "Durable memory store", "Rows of memory facts in Postgres.", "RT-OBJ-store")
CACHE = Candidate("RT-OBJ-memory-cache", "OBJ", "Wrapper-local formatted memory cache", "", "RT-OBJ-memory-cache")
ROUTE = Candidate("RT-RTE-store", "RTE", "Durable memory store", "", "RT-RTE-store")


def test_words_ignore_case_punctuation_and_markup():
    assert words("**Static**, dynamic — and `bucketed` profile!") == ["static", "dynamic", "and", "bucketed", "profile"]


def test_ratio_is_one_for_the_same_words_and_zero_for_empty_text():
    assert ratio("Document content and chunks", "document CONTENT, and chunks.") == 1.0
    assert ratio("", "anything") == 0.0


def test_the_same_slug_under_another_prefix_is_strong_evidence():
    bonus, reason = id_evidence("MEM-OBJ-store", STORE)
    assert bonus > 0.4
    assert reason == "same slug 'store' under RT-"


def test_the_same_number_is_weak_evidence():
    bonus, reason = id_evidence("MEM-OBJ-3", Candidate("OBJ-3", "OBJ", "x", "", "RT-OBJ-3"))
    assert 0 < bonus < 0.2
    assert "same number 3" in reason


def test_a_slug_match_with_an_unrelated_label_still_suggests_same():
    result = suggest(Source("MEM-OBJ-store", "OBJ", "Postgres fact rows"), [STORE, CACHE])
    assert (result.relation, result.target) == ("same", "RT-OBJ-store")
    assert "same slug 'store' under RT-" in result.reason


def test_a_close_label_without_id_evidence_suggests_same_with_its_similarity():
    result = suggest(Source("MEM-OBJ-formatted-cache", "OBJ", "Wrapper-local formatted memory cache"), [STORE, CACHE])
    assert (result.relation, result.target) == ("same", "RT-OBJ-memory-cache")
    assert result.score >= SAME_THRESHOLD
    assert "label similarity 1.00" in result.reason


def test_only_records_of_the_same_kind_compete():
    result = suggest(Source("MEM-RTE-store", "RTE", "Durable memory store"), [STORE, ROUTE])
    assert result.target == "RT-RTE-store"


def test_nothing_close_enough_suggests_new_without_a_target():
    result = suggest(Source("MEM-OBJ-claude-file", "OBJ", "Claude memory file document"), [STORE, CACHE])
    assert result.relation == "new"
    assert result.target == ""
    assert "nearest" in result.reason


def test_no_candidate_of_the_kind_is_a_confident_new():
    result = suggest(Source("MEM-CLM-graph", "CLM", "Graph display is a consumer"), [STORE])
    assert (result.relation, result.target, result.score) == ("new", "", 1.0)


def test_scores_stay_between_zero_and_one():
    value, _ = score(Source("MEM-OBJ-store", "OBJ", STORE.label, STORE.text), STORE)
    assert value == 1.0
    value, _ = score(Source("MEM-OBJ-x", "OBJ", "", ""), STORE)
    assert value == 0.0
