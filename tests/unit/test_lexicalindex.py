"""Lexical index: chunk rows and title rows (FTS5) flip with a document's live version."""

from __future__ import annotations

import pytest

import proxypointer.store.fts as fts
import proxypointer.store.lexical as lexicalindex
from proxypointer.store.records import encode_record, lexical_text
from proxypointer.store.registry import Registry


@pytest.fixture
def reg(tmp_path):
    r = Registry(tmp_path / "store")
    yield r
    r.close()


# -- the lexical index (FTS5) -----------------------------------------------------------------
def commit_texts(reg, doc_id, version, texts, **kw):
    ids = [f"{doc_id}::{version}::n{i}::0000" for i in range(len(texts))]
    reg.begin_write(doc_id, f"/x/{doc_id}.md", "h" + version)
    old = reg.commit_version(doc_id, source_path=f"/x/{doc_id}.md", doc_hash="h" + version, version=version,
                             title="T", line_count=3, n_sections=len(ids), chunk_ids=ids, source_mtime=1.0,
                             source_size=10, lexical_texts=texts, **kw)
    reg.finish(doc_id)
    return ids, old


def found(reg, *terms, n=10, doc_ids=None):
    return [cid for cid, _ in reg.lexical.search(list(terms), n, doc_ids)]


def test_lexical_rows_flip_with_the_version_and_go_with_the_document(reg):
    ids1, _ = commit_texts(reg, "d", "v1", ["[Leave > Sick] sick pay rules", "parking barrier"])
    commit_texts(reg, "e", "v1", ["sick notes from the doctor"])
    assert set(found(reg, "sick")) == {ids1[0], "e::v1::n0::0000"}
    hits = reg.lexical.search(["sick", "pay"], 10)
    assert hits[0][0] == ids1[0] and hits[0][1] > hits[1][1] > 0  # higher is better
    assert found(reg, "leave") == [ids1[0]]  # the breadcrumb is indexed
    ids2, old = commit_texts(reg, "d", "v2", ["holiday allowance"])
    assert set(old) == set(ids1)
    assert found(reg, "sick", doc_ids=["d"]) == [] and found(reg, "holiday") == ids2
    assert reg.lexical.rows("d") == {ids2[0]: "holiday allowance"}
    reg.begin_delete("d")
    reg.remove("d")
    assert found(reg, "holiday") == [] and reg.lexical.rows("d") == {}
    assert found(reg, "sick") == ["e::v1::n0::0000"]


def test_lexical_search_filters_by_document_and_escapes_fts_syntax(reg):
    commit_texts(reg, "a", "v1", ['He said "NEAR" and OR col:x a*b'])
    commit_texts(reg, "b", "v1", ["near the river"])
    assert set(found(reg, "near")) == {"a::v1::n0::0000", "b::v1::n0::0000"}
    assert found(reg, "near", doc_ids=["b"]) == ["b::v1::n0::0000"]
    assert found(reg, "near", doc_ids=[]) == []
    for term in ('"', "NEAR(", "col:x", "a*", "AND", "-x", "^y", "(", "x''"):
        reg.lexical.search([term], 5)  # plain text, never an FTS5 syntax error
    assert found(reg, "col") == ["a::v1::n0::0000"]
    assert reg.lexical.search([], 5) == [] and reg.lexical.search(["near"], 0) == []


def test_without_lexical_texts_the_rows_come_from_the_record_copies(reg):
    meta = {"doc_id": "d", "doc_hash": "h1", "version": "v1", "node_id": "n", "start_line": 1, "end_line": 3,
            "breadcrumb": "Guide > Kettle"}
    rec = encode_record("descale monthly", meta)
    assert lexical_text("descale monthly", meta) == "Guide > Kettle\ndescale monthly"
    reg.begin_write("d", "/x/d.md", "h1")
    reg.commit_version("d", source_path="/x/d.md", doc_hash="h1", version="v1", title="T", line_count=3,
                       n_sections=1, chunk_ids=["d::v1::n::0000"], source_mtime=1.0, source_size=10, records=[rec])
    assert found(reg, "kettle") == found(reg, "descale") == ["d::v1::n::0000"]
    # committed without copies: no row until the copy is written (fill_records, check --repair)
    reg.commit_version("e", source_path="/x/e.md", doc_hash="h1", version="v1", title="T", line_count=3,
                       n_sections=1, chunk_ids=["e::v1::n::0000"], source_mtime=1.0, source_size=10)
    assert reg.lexical.rows("e") == {}
    reg.chunks.set_chunk_records({"e::v1::n::0000": encode_record("toaster crumbs", {**meta, "doc_id": "e"})})
    assert found(reg, "toaster") == ["e::v1::n::0000"]
    with pytest.raises(ValueError, match="2 lexical texts for 1 chunks"):
        reg.commit_version("f", source_path="/x/f.md", doc_hash="h", version="v", title="T", line_count=1,
                           n_sections=1, chunk_ids=["f::v::n::0000"], source_mtime=1.0, source_size=1,
                           lexical_texts=["a", "b"])


def test_an_older_store_and_an_older_writer_are_brought_in_step(tmp_path):
    def rec(doc, text):
        return encode_record(text, {"doc_id": doc, "doc_hash": "h", "version": "v1", "node_id": "n",
                                    "start_line": 1, "end_line": 1, "breadcrumb": ""})

    reg = Registry(tmp_path / "s")
    commit_texts(reg, "d", "v1", ["kettle descaling"])
    # A store written before the lexical index existed: no FTS table, no meta; chunks with copies.
    reg._db.execute("DROP TABLE chunks_fts")
    reg._db.execute("DELETE FROM lexical_rows")
    reg._db.execute("DELETE FROM meta WHERE key LIKE 'lexical%'")
    reg._db.execute("UPDATE chunks SET record = ?", (rec("d", "kettle descaling"),))
    assert found(reg, "kettle") == ["d::v1::n0::0000"]
    # A writer that does not keep the lexical index (an older version) replaces the chunks.
    with reg.transaction() as db:
        db.execute("DELETE FROM chunks")
        db.execute("INSERT INTO chunks (chunk_id, doc_id, record) VALUES ('d::v2::n::0000', 'd', ?)",
                   (rec("d", "toaster crumbs"),))
        reg._bump(db)
    other = Registry(tmp_path / "s")  # another process sees it too
    assert found(other, "kettle") == [] and found(other, "toaster") == ["d::v2::n::0000"]
    # A table built with another tokenizer is rebuilt from its own text.
    other._db.execute("UPDATE meta SET value = 'unicode61' WHERE key = 'lexical_tokenizer'")
    assert found(other, "crumb") == ["d::v2::n::0000"]  # porter again: "crumbs" -> "crumb"
    assert other.get_meta("lexical_tokenizer").startswith("porter")
    reg.close()
    other.close()


def test_a_large_store_scores_the_rarest_terms_only(reg, monkeypatch):
    texts = [f"model number {i} of the study" for i in range(20)] + ["model of the kettle descaling"]
    ids, _ = commit_texts(reg, "d", "v1", texts)
    assert reg.lexical.document_frequencies(["model", "models", "kettle", "study", "foo_kettle", "xyzzy"]) == {
        "model": 21, "models": 21, "kettle": 1, "study": 20, "foo_kettle": 0, "xyzzy": 0}
    both = reg.lexical.search(["model", "kettle"], 30)
    assert len(both) == 21 and both[0][0] == ids[-1]  # small store: every term scored
    monkeypatch.setattr(fts, "LEXICAL_MAX_ROWS", 10)
    # "model" (21 rows) is left out, "kettle" (1 row) kept: only the kettle chunk is scored
    assert found(reg, "model", "kettle", n=30) == [ids[-1]]
    assert reg.lexical.search(["model", "study"], 30) == []  # only common terms: no lexical hits
    monkeypatch.setattr(fts, "LEXICAL_MAX_ROWS_FILTERED", 10)
    assert found(reg, "model", "kettle", n=30, doc_ids=["d"]) == [ids[-1]]
    monkeypatch.setattr(fts, "LEXICAL_MAX_ROWS_FILTERED", 100)
    assert len(found(reg, "model", "kettle", n=30, doc_ids=["d"])) == 21


# -- the title index (FTS5, one row per heading) ------------------------------------------------
def tree_json(*nodes):
    """Stored tree rows: (node_id, title, parent_id) -> DocumentTree.to_json's shape."""
    import json

    return json.dumps([[n, t, 1, i + 1, i + 1, i + 1, i + 1, p, "heading", 1] for i, (n, t, p) in enumerate(nodes)])


FILING = tree_json(("i8", "ITEM 8. **Financial Statements**", ""), ("bs", "CONSOLIDATED BALANCE SHEETS", "i8"),
                   ("n14", "Note 14 - Debt", "i8"), ("pre", "", ""))


def titles(reg, *terms, n=10, doc_ids=None):
    return [(h.doc_id, h.node_id) for h in reg.lexical.title_search(list(terms), n, doc_ids)]


def test_title_rows_hold_the_title_path_stemmed_and_flip_with_the_version(reg):
    commit_texts(reg, "f", "v1", ["x"], tree_json=FILING)
    # the title path: a section is found by its parent's words too; "sheet" meets "SHEETS" (Porter)
    assert titles(reg, "balance", "sheet") == [("f", "bs")]
    assert set(titles(reg, "financial")) == {("f", "i8"), ("f", "bs"), ("f", "n14")}
    assert titles(reg, "14") == [("f", "n14")] and titles(reg, "debts") == [("f", "n14")]
    assert titles(reg, "statements")[0] == ("f", "i8")  # markup stripped: "**Financial Statements**"
    (d, version, node, score, _), = reg.lexical.title_search(["debt"], 5)
    assert (d, version, node) == ("f", "v1", "n14") and score > 0  # higher is better
    commit_texts(reg, "f", "v2", ["y"], tree_json=tree_json(("cf", "Statements of Cash Flows", "")))
    assert titles(reg, "balance") == [] and titles(reg, "cash") == [("f", "cf")]
    assert reg.lexical.title_search(["cash"], 5)[0][1] == "v2"
    reg.begin_delete("f")
    assert titles(reg, "cash") == []  # a document being deleted is not live
    reg.remove("f")
    assert reg._db.execute("SELECT COUNT(*) FROM title_rows").fetchone()[0] == 0


def test_a_document_title_heading_is_left_out_of_its_sections_title_paths(reg):
    # a paper: "# Title" above every other heading. Its words in every row would tell no section
    # from another and rank the shortest paths first (abstract, introduction) for any question
    # that repeats the title's words.
    paper = tree_json(("t", "Detecting Spam on Twitter", ""), ("ab", "Abstract", "t"),
                      ("f", "Account features", "t"), ("ft", "Timing of tweets", "f"))
    commit_texts(reg, "p", "v1", ["x"], tree_json=paper)
    assert titles(reg, "spam") == [("p", "t")]  # the title heading's own row keeps its words
    assert titles(reg, "abstract") == [("p", "ab")]
    assert titles(reg, "account", "timing") == [("p", "ft"), ("p", "f")]  # other parents still count
    # two outermost headings: neither is the document's title, both stay in their paths
    commit_texts(reg, "f", "v1", ["x"], tree_json=FILING)
    assert set(titles(reg, "financial", doc_ids=["f"])) == {("f", "i8"), ("f", "bs"), ("f", "n14")}


def test_title_rows_keep_their_subtree_chunk_ids_so_a_query_reads_no_tree(reg):
    ids = ["f::v1::i8::0000", "f::v1::bs::0000", "f::v1::bs::0001", "f::v1::n14::0000", "f::v1::pre::0000"]
    reg.begin_write("f", "/x/f.md", "hv1")
    reg.commit_version("f", source_path="/x/f.md", doc_hash="hv1", version="v1", title="T", line_count=3,
                       n_sections=4, chunk_ids=ids, source_mtime=1.0, source_size=10,
                       lexical_texts=["a", "b", "c", "d", "e"], tree_json=FILING)
    reg.finish("f")
    got = {h.node_id: h.chunk_ids for h in reg.lexical.title_search(["financial", "debt", "balance"], 10)}
    # the node and its descendants, in the tree's order; "pre" (no title words) has no row
    assert got == {"i8": tuple(ids[:4]), "bs": tuple(ids[1:3]), "n14": (ids[3],)}
    # a row written by an older version of the library knows no chunks: the caller reads the tree
    reg._db.execute("UPDATE title_rows SET chunks = NULL")
    assert {h.chunk_ids for h in reg.lexical.title_search(["debt"], 10)} == {None}


def test_title_search_filters_by_document_and_escapes_fts_syntax(reg):
    commit_texts(reg, "a", "v1", ["x"], tree_json=tree_json(("r", 'Risk "NEAR" factors col:x', "")))
    commit_texts(reg, "b", "v1", ["x"], tree_json=tree_json(("r", "Risk factors", "")))
    assert set(titles(reg, "risk")) == {("a", "r"), ("b", "r")}
    assert titles(reg, "risk", doc_ids=["b"]) == [("b", "r")] and titles(reg, "risk", doc_ids=[]) == []
    for term in ('"', "NEAR(", "col:x", "a*", "AND", "-x", "(", "x''"):
        reg.lexical.title_search([term], 5)  # plain text, never an FTS5 syntax error
    assert reg.lexical.title_search([], 5) == [] and reg.lexical.title_search(["risk"], 0) == []


def test_title_search_reads_past_the_rows_of_documents_being_deleted(reg):
    for d in "abcdef":  # equal titles: equal scores, ranked by row (a first)
        commit_texts(reg, d, "v1", ["x"], tree_json=tree_json(("r", "Risk factors", "")))
    for d in "abcde":
        reg.begin_delete(d)
    assert titles(reg, "risk", n=1) == [("f", "r")]  # the first rows read are all being deleted
    assert titles(reg, "risk", n=3) == [("f", "r")]  # every match read: fewer than n live
    assert titles(reg, "risk", n=2, doc_ids=["a", "f"]) == [("f", "r")]


def test_an_older_store_gets_its_title_index_from_the_stored_trees(tmp_path):
    reg = Registry(tmp_path / "s")
    commit_texts(reg, "f", "v1", ["x"], tree_json=FILING)
    # A store written before the title index existed: no FTS table, no rows, no meta.
    reg._db.execute("DROP TABLE titles_fts")
    reg._db.execute("DELETE FROM title_rows")
    reg._db.execute("DELETE FROM meta WHERE key LIKE 'title%'")
    other = Registry(tmp_path / "s")
    assert titles(other, "balance") == [("f", "bs")]
    assert other.get_meta("title_index") == lexicalindex.TITLE_INDEX
    # A writer that keeps only the chunk index (the version before this one) replaces the document.
    with other.transaction() as db:
        db.execute("UPDATE documents SET version = 'v2', tree_json = ? WHERE doc_id = 'f'",
                   (tree_json(("cf", "Cash flows", "")),))
        other._bump(db)
        db.execute("UPDATE meta SET value = (SELECT value FROM meta WHERE key = 'generation')"
                   " WHERE key = 'lexical_generation'")
    assert titles(reg, "balance") == [] and titles(reg, "cash") == [("f", "cf")]
    # An index built another way (an older title text or tokenizer) is rebuilt.
    reg._db.execute("UPDATE meta SET value = 'old' WHERE key = 'title_index'")
    reg._db.execute("DELETE FROM titles_fts")
    assert titles(reg, "cash") == [("f", "cf")]
    reg.close()
    other.close()


def test_a_large_store_scores_the_rarest_title_terms_only(reg, monkeypatch):
    rows = [(f"n{i}", f"Note {i + 10} notes to the accounts", "") for i in range(20)] + [("k", "Kettle notes", "")]
    commit_texts(reg, "d", "v1", ["x"], tree_json=tree_json(*rows))
    assert reg.lexical.document_frequencies(["notes", "kettle"], "titles") == {"notes": 21, "kettle": 1}
    monkeypatch.setattr(fts, "LEXICAL_MAX_ROWS", 10)
    assert titles(reg, "notes", "kettle") == [("d", "k")]
