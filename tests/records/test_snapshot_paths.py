"""records.validation.quotes.SnapshotPaths: a cited path resolves as the plain definition says, in constant time (pure)."""
from hypothesis import given
from hypothesis import strategies as st

from records.validation import quotes

NAMES = st.sampled_from(["src", "app", "lib", "repo-main", "a.py", "b.md", "store.py", "x"])
PATHS = st.lists(NAMES, min_size=1, max_size=4).map("/".join)


def resolve_by_definition(path, paths):
    """Itself, or under the archive's one top-level folder when every file sits under the same one."""
    if path in paths:
        return path
    tops = {p.split("/", 1)[0] for p in paths}
    if len(tops) == 1 and all("/" in p for p in paths) and f"{next(iter(tops))}/{path}" in paths:
        return f"{next(iter(tops))}/{path}"
    return None


def folder_by_definition(path, paths):
    prefix = path.rstrip("/") + "/"
    return any(p.startswith(prefix) or p.split("/", 1)[-1].startswith(prefix) for p in paths)


@given(st.sets(PATHS, max_size=12), st.lists(PATHS | st.sampled_from(["", "/", "src/"]), max_size=12))
def test_resolution_and_folders_match_their_definitions(paths, cited):
    index = quotes.SnapshotPaths(paths)
    for path in cited:
        assert index.resolve(path) == resolve_by_definition(path, paths)
        assert index.is_folder(path) == folder_by_definition(path, paths)


def test_a_wrapped_archive_resolves_paths_named_without_its_top_folder():
    index = quotes.SnapshotPaths(["repo-main/src/store.py", "repo-main/README.md"])
    assert index.resolve("src/store.py") == "repo-main/src/store.py"
    assert index.resolve("repo-main/README.md") == "repo-main/README.md"
    assert index.resolve("store.py") is None
    assert index.is_folder("src") and index.is_folder("src/") and index.is_folder("repo-main/src")
    assert not index.is_folder("src/store.py")


def test_twenty_thousand_files_and_five_hundred_citations_check_without_a_scan_per_citation(monkeypatch):
    paths = [f"repo-main/pkg{n // 100}/mod{n}.py" for n in range(20_000)]
    files = quotes.SnapshotFiles({paths[n]: quotes.SourceText(f"def f{n}():\n    return {n}\n") for n in range(500)},
                                 quotes.SnapshotPaths(paths))
    built = []
    real = quotes.SnapshotPaths.__init__

    def counting(self, *args, **kwargs):
        built.append(1)
        real(self, *args, **kwargs)

    monkeypatch.setattr(quotes.SnapshotPaths, "__init__", counting)
    results = [quotes.check_citation(quotes.Citation(quotes.QUOTATION, n + 1, f"return {n}", f"pkg{n // 100}/mod{n}.py",
                                                     "", ""), files, run_commit="")
               for n in range(500)]
    assert [r.status for r in results] == [quotes.VERIFIED] * 500
    assert built == []  # the index was built once, by the caller, not once per citation


def test_a_folder_under_the_top_folder_is_not_looked_up_under_it_twice():
    # Found by the property above: `app/src` is a folder of `app/app/src/src` (named under its top
    # folder `app`); `src` is not, though looking `app/src` up again under `app` said it was.
    index = quotes.SnapshotPaths({"app/app/src/src"})
    assert index.is_folder("app/src") and index.is_folder("app/app/src")
    assert not index.is_folder("src")
