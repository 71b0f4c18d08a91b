"""Discovery: store and hidden folders (shared case 34), symlinks, doc_id collisions (case 37)."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
from pathlib import Path

import pytest

from proxypointer.read.discovery import SourceFile, discover

MD = (".md", ".markdown")


def ids(result) -> list[str]:
    return sorted(f.doc_id for f in result.files)


@pytest.fixture
def vault(cases_dir, tmp_path) -> Path:
    """Case 34's notes folder, built by its make_input.sh (symlinks included)."""
    dest = tmp_path / "vault"
    subprocess.run(["sh", str(cases_dir / "34-store-and-hidden-dirs-inside-corpus" / "make_input.sh"), str(dest)],
                   check=True, capture_output=True)
    return dest


# -- 34 ------------------------------------------------------------------------------------
def test_case34_hidden_folders_loops_and_aliases(vault):
    got = discover([vault], MD)
    assert ids(got) == ["boiler", "projects/garden", "releases/v2"]  # the alias current.md is v2 itself
    assert got.failed == []
    (v2,) = [f for f in got.files if f.doc_id == "releases/v2"]
    assert v2.real_path == os.path.realpath(vault / "releases" / "v2.md")
    assert not any(f.doc_id.startswith(("loop/", ".")) for f in got.files)


def test_case34_the_store_is_never_a_source_whatever_its_name(vault, tmp_path):
    # a store as ingest leaves it: registry + stored source copies
    for name in (".proxypointer", "index-store", "deep/er/store"):
        store = vault / name
        (store / "sources" / "ab").mkdir(parents=True)
        (store / "sources" / "ab" / ("ab" + "0" * 62 + ".md")).write_text("# Boiler service\n", encoding="utf-8")
        (store / "registry.sqlite3").write_bytes(b"")
    got = discover([vault], MD, include_hidden=True)
    assert not any("sources" in f.doc_id or "store" in f.doc_id for f in got.files)
    # the configured store is skipped even before it holds a registry
    fresh = vault / "notes-index"
    (fresh / "sources").mkdir(parents=True)
    (fresh / "sources" / "x.md").write_text("# X\n", encoding="utf-8")
    assert "notes-index/sources/x" not in ids(discover([vault], MD, stores=[fresh]))
    assert "notes-index/sources/x" in ids(discover([vault], MD))
    # a path given inside a store is refused, naming the store
    inside = discover([vault / "index-store" / "sources"], MD)
    assert inside.files == [] and "lies inside the proxypointer store" in inside.failed[0][1]


def test_kind34_other_hidden_and_tool_folders(tmp_path):
    root = tmp_path / "repo"
    for rel in ("doc.md", ".vscode/settings.md", ".github/ISSUE.md", "node_modules/pkg/README.md",
                "sub/__pycache__/x.md", "env/lib/README.md", ".hidden.md", "sub/.draft.md", "sub/ok.markdown",
                "site-packages/a/README.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("# T\n\ntext\n", encoding="utf-8")
    (root / "env" / "pyvenv.cfg").write_text("home = /usr\n", encoding="utf-8")  # a virtualenv
    assert ids(discover([root], MD)) == ["doc", "sub/ok"]
    everything = ids(discover([root], MD, include_hidden=True))
    assert {".vscode/settings", ".github/ISSUE", "node_modules/pkg/README", ".hidden", "env/lib/README"} <= set(
        everything
    )
    # a hidden folder given explicitly is read: only folders *below* a given one are skipped
    assert ids(discover([root / ".github"], MD)) == ["ISSUE"]


def test_kind34_symlink_loops_end_and_aliases_count_once(tmp_path):
    root = tmp_path / "notes"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "deep.md").write_text("# Deep\n", encoding="utf-8")
    os.symlink("..", root / "a" / "b" / "up")  # loop through the parent
    os.symlink(root, root / "a" / "self")  # absolute loop
    os.symlink("a/b/deep.md", root / "alias.md")
    os.symlink("missing.md", root / "broken.md")  # dangling: skipped
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "shared.md").write_text("# Shared\n", encoding="utf-8")
    os.symlink(outside, root / "linked")  # a folder linked in: followed
    got = discover([root], MD)
    assert ids(got) == ["a/b/deep", "linked/shared"]
    # the same folder given twice, or a file and its folder: each file once
    assert ids(discover([root, root, root / "a" / "b" / "deep.md"], MD)) == ["a/b/deep", "linked/shared"]


def test_a_dangling_link_or_a_pipe_with_a_known_suffix_is_skipped_with_a_warning(tmp_path, caplog):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "kept.md").write_text("# Kept\n", encoding="utf-8")
    os.symlink("gone.md", root / "broken.md")
    os.mkfifo(root / "pipe.md")  # reading it would block until a writer comes
    with caplog.at_level("WARNING", logger="proxypointer.read.discovery"):
        assert ids(discover([root], MD)) == ["kept"]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(f"{root / 'broken.md'}: skipped: a symbolic link to gone.md" in m for m in warnings), warnings
    assert any(f"{root / 'pipe.md'}: skipped: not a regular file" in m for m in warnings), warnings


def test_a_pipe_or_dangling_link_given_directly_fails_with_what_it_is(tmp_path):
    os.mkfifo(tmp_path / "pipe.md")
    os.symlink("gone.md", tmp_path / "broken.md")
    got = discover([tmp_path / "pipe.md", tmp_path / "broken.md", tmp_path / "missing.md"], MD)
    assert not got.files
    messages = dict(got.failed)
    assert messages[str(tmp_path / "pipe.md")].endswith("not a regular file or folder (a pipe, socket or device)")
    assert messages[str(tmp_path / "broken.md")].endswith("a symbolic link to gone.md, which does not exist")
    assert messages[str(tmp_path / "missing.md")].endswith("no such file or folder; check the path")


def test_source_files_are_picklable(tmp_path):
    (tmp_path / "x.md").write_text("# X\n", encoding="utf-8")
    (f,) = discover([tmp_path / "x.md"], MD).files
    assert f == SourceFile("x", str(tmp_path / "x.md"), os.path.realpath(tmp_path / "x.md"), None, ".md")
    assert pickle.loads(pickle.dumps(f)) == f


def test_a_file_given_directly_is_read_whatever_its_suffix(tmp_path):
    (tmp_path / "notes.txt").write_text("# Notes\n", encoding="utf-8")
    (f,) = discover([tmp_path / "notes.txt"], MD).files
    assert (f.doc_id, f.suffix) == ("notes", ".md")
    assert discover([tmp_path], MD).files == []  # but a folder is searched for known suffixes only
    missing = discover([tmp_path / "nope"], MD)
    assert missing.failed == [(str(tmp_path / "nope"), f"{tmp_path / 'nope'}: no such file or folder; check the path")]


# -- 37 ------------------------------------------------------------------------------------
@pytest.fixture
def layouts(cases_dir, tmp_path) -> Path:
    dest = tmp_path / "37"
    shutil.copytree(cases_dir / "37-doc-id-collisions", dest)
    return dest


def test_case37_same_stem_two_suffixes(layouts):
    got = discover([layouts / "kb"], MD)
    assert ids(got) == ["faq"]
    ((loser, msg),) = got.failed
    winner = got.files[0].path
    assert {Path(loser).name, Path(winner).name} == {"faq.md", "faq.markdown"}
    assert loser in msg and winner in msg and "rename one of them" in msg


def test_case37_two_folders_with_a_readme(layouts):
    got = discover([layouts / "teamA", layouts / "teamB"], MD)
    assert [f.path for f in got.files] == [str(layouts / "teamA" / "README.md")]  # the first given keeps it
    ((loser, msg),) = got.failed
    assert loser == str(layouts / "teamB" / "README.md")
    assert str(layouts / "teamA" / "README.md") in msg and "common parent folder" in msg
    # the cure the message names: their common parent folder keeps both ids apart
    teams = layouts / "teams"
    for t in ("teamA", "teamB"):
        shutil.copytree(layouts / t, teams / t)
    assert ids(discover([teams], MD)) == ["teamA/README", "teamB/README"]


def test_case37_two_files_given_directly(layouts):
    a, b = layouts / "loose" / "a" / "notes.md", layouts / "loose" / "b" / "notes.md"
    got = discover([a, b], MD)
    assert [f.path for f in got.files] == [str(a)]
    ((loser, msg),) = got.failed
    assert loser == str(b) and str(a) in msg and "ingest their folder instead" in msg


def test_kind37_the_registered_owner_keeps_its_id(layouts):
    a, b = layouts / "teamA" / "README.md", layouts / "teamB" / "README.md"
    got = discover([layouts / "teamA", layouts / "teamB"], MD, owner_of=lambda d: os.path.realpath(b))
    assert [f.path for f in got.files] == [str(b)]
    assert got.failed[0][0] == str(a)


def test_a_name_whose_id_is_a_dot_step_fails_and_the_rest_is_found(tmp_path):
    # found by a new user: "...md" became doc id "..", which the inspector's links (and any
    # browser) resolve as a step up to another path
    (tmp_path / "...md").write_text("# Dots\n", encoding="utf-8")
    (tmp_path / "ok.md").write_text("# Ok\n", encoding="utf-8")
    got = discover([tmp_path / "...md", tmp_path / "ok.md"], MD)
    assert [f.doc_id for f in got.files] == ["ok"]
    ((shown, message),) = got.failed
    assert shown == str(tmp_path / "...md")
    assert message.endswith("not indexed: its name gives the doc id part '..', which paths and URLs read as a step "
                            "(rename it)")
