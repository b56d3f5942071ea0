"""`memory-comparison` `version: 2` read by its own rules (issue 25 item 1; DESIGN §6; upstream
`types/agent-memory-profile.schema.yaml` at 53a0a4c4: axes of units, findings with value, basis, records
and note, records cited as `member.md#anchor`)."""
from __future__ import annotations

import copy

from records.validation import profile_forms, profile_v2

UNIT = {"scope": "the snapshot file", "assessment": "known", "records": ["memory.md#mem-obj-snapshot-rows"],
        "note": "read at the frozen commit",
        "findings": [{"value": "JSON rows on the host filesystem", "basis": "wired",
                      "records": ["runtime.md#rt-obj-snapshot-file"], "note": "save_snapshot writes them"}]}


def profile() -> dict:
    axes = {axis: {"assessment": "known", "units": [copy.deepcopy(UNIT)], "records": ["memory.md#mem-obj-snapshot-rows"],
                   "note": "one unit"} for axis in profile_v2.AXES}
    return {"version": 2, "scope": "tinycache's retained material", "axes": axes}


def codes(p) -> list[str]:
    return [problem.code for problem in profile_forms.check_profile(p, role="memory-profile", current=True)]


def test_a_version_2_profile_passes_by_its_own_rules():
    assert codes(profile()) == []


def test_its_records_are_link_destinations_read_as_ids():
    cited = {record for _, record in profile_forms.profile_records(profile())}
    assert cited == {"MEM-OBJ-snapshot-rows", "RT-OBJ-snapshot-file"}


def test_a_known_unit_needs_a_finding_and_an_uninspected_one_takes_none():
    """Schema `unit`: known/partial → findings minItems 1, else maxItems 0."""
    p = profile()
    p["axes"]["lineage"]["units"][0]["findings"] = []
    assert codes(p) == ["profile-values-mismatch"]
    p["axes"]["lineage"]["units"][0]["assessment"] = "uninspected"
    p["axes"]["lineage"]["units"][0]["findings"] = [UNIT["findings"][0]]
    assert codes(p) == ["profile-values-mismatch"]


def test_a_finding_needs_a_basis_of_the_vocabulary_and_a_record_citation():
    p = profile()
    p["axes"]["trace_source"]["units"][0]["findings"][0] |= {"basis": "probable", "records": ["RT-OBJ-snapshot-file"]}
    assert sorted(codes(p)) == ["profile-invalid-basis", "profile-record-form"]


def test_an_axis_of_the_older_forms_is_unknown_in_version_2():
    p = profile()
    p["axes"]["faithfulness_tested"] = p["axes"]["lineage"]
    del p["axes"]["lineage"]
    assert sorted(codes(p)) == ["profile-axis-missing", "profile-axis-unknown"]
