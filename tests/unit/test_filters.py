"""Metadata filters: validated once, read the same way by every search path."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxypointer.errors import ConfigError
from proxypointer.store.filters import (
    FILTER_FIELD_TYPES,
    FILTER_FIELDS,
    SUPPORTED_OPERATORS,
    check_where,
    doc_filter,
    filter_doc_ids,
    matches_where,
)

DATA = Path(__file__).resolve().parents[2] / "data"


def test_matches_where_honours_every_supported_operator():
    m = {"doc_id": "a", "kind": "heading", "level": 2, "n_tokens": 120}
    assert matches_where(m, None) and matches_where(m, {})
    assert matches_where(m, {"doc_id": "a"}) and not matches_where(m, {"doc_id": "b"})
    assert matches_where(m, {"doc_id": {"$in": ["a", "b"]}}) and not matches_where(m, {"doc_id": {"$nin": ["a"]}})
    assert matches_where(m, {"$and": [{"doc_id": "a"}, {"kind": {"$ne": "window"}}]})
    assert not matches_where(m, {"$or": [{"doc_id": "b"}, {"kind": "window"}]})
    assert matches_where(m, {"level": {"$gt": 1}}) and not matches_where(m, {"level": {"$gt": 2}})
    assert matches_where(m, {"level": {"$gte": 2}}) and matches_where(m, {"level": {"$lte": 2}})
    assert matches_where(m, {"n_tokens": {"$lt": 200}}) and not matches_where(m, {"n_tokens": {"$lt": 100}})
    assert not matches_where(m, {"missing": {"$gt": 0}}) and matches_where(m, {"missing": {"$ne": 1}})
    assert not matches_where(m, {"kind": {"$gt": 1}})  # order operators compare numbers only


def test_check_where_refuses_what_a_search_path_cannot_honour():
    assert check_where(None) is None and check_where({}) is None
    # several fields in one mapping, one-clause $and: the form Chroma accepts
    assert check_where({"doc_id": "a", "kind": "heading"}) == {"$and": [{"doc_id": "a"}, {"kind": "heading"}]}
    assert check_where({"$and": [{"doc_id": "a"}]}) == {"doc_id": "a"}
    with pytest.raises(ConfigError, match=r"operator '\$contains' is not supported; supported: \$and, \$or, \$eq"):
        check_where({"text": {"$contains": "x"}})
    with pytest.raises(ConfigError, match=r"operator '\$not' is not supported"):
        check_where({"$not": [{"doc_id": "a"}]})
    with pytest.raises(ConfigError, match=r"\$gt expects a number"):
        check_where({"level": {"$gt": "2"}})
    with pytest.raises(ConfigError, match=r"\$in expects a list"):
        check_where({"doc_id": {"$in": "a"}})
    with pytest.raises(ConfigError, match="one operator"):
        check_where({"level": {"$gt": 1, "$lt": 3}})
    assert "$gt" in SUPPORTED_OPERATORS


def test_doc_id_filters():
    assert filter_doc_ids({"doc_id": "a"}) == ["a"] and filter_doc_ids({"doc_id": {"$in": ["a", "b"]}}) == ["a", "b"]
    assert filter_doc_ids({"doc_id": {"$eq": "a"}}) == ["a"]
    assert filter_doc_ids({"doc_id": {"$ne": "a"}}) is None and filter_doc_ids({"kind": "heading"}) is None
    assert doc_filter(["a"]) == {"doc_id": "a"} and doc_filter(["a", "b"]) == {"doc_id": {"$in": ["a", "b"]}}


def test_a_filter_on_a_field_no_chunk_has_is_refused_by_name(make_index):
    # a fresh user's typo, {"nosuchfield": 1}, matched nothing and returned no sections, silently
    with pytest.raises(ConfigError, match=r"no chunk has the field 'nosuchfield'.*fields: doc_id, doc_hash"):
        check_where({"nosuchfield": 1})
    with pytest.raises(ConfigError, match="'levle'"):
        check_where({"$or": [{"level": 1}, {"levle": {"$lte": 2}}]})
    from proxypointer.retrieve.retriever import Retriever

    idx = make_index()
    assert not idx.ingest([DATA], show_progress=False).failed
    with pytest.raises(ConfigError, match="'section'"):
        Retriever(idx).retrieve("parental leave", k=3, where={"section": "Leave"})
    assert Retriever(idx).retrieve("parental leave", k=3, where={"kind": "heading"})


def test_the_filter_fields_are_the_stored_chunk_metadata():
    from proxypointer.chunk.chunker import Chunk
    from proxypointer.store.chroma import chunk_metadata

    c = Chunk(chunk_id="d::v1::n::0000", doc_id="d", doc_hash="h" * 64, version="v1", node_id="n", chunk_index=0,
              kind="heading", title="T", level=2, parent_id="", breadcrumb=("Doc", "T"), start_line=1, end_line=2,
              body_end_line=2, chunk_start_line=2, chunk_end_line=2, text="x", embed_text="Doc > T\nx", n_tokens=5)
    metadata = chunk_metadata(c, "d.md")
    assert set(metadata) == set(FILTER_FIELDS)
    assert {k: type(v) for k, v in metadata.items()} == FILTER_FIELD_TYPES


def test_a_value_of_another_type_than_its_field_is_refused(make_index):
    # {"level": "2"} matched nothing in Chroma, silently; {"empty_body": 1} matched nothing in
    # Chroma but every empty chunk on the lexical path (Python's True == 1)
    with pytest.raises(ConfigError, match=r"where\.level: level is a number in every chunk, so '2' would match"):
        check_where({"level": "2"})
    with pytest.raises(ConfigError, match=r"empty_body is true or false.*so 1 would"):
        check_where({"empty_body": 1})
    with pytest.raises(ConfigError, match=r"level is a number.*so True"):
        check_where({"level": {"$ne": True}})
    with pytest.raises(ConfigError, match=r"doc_id is a string.*so 7 would"):
        check_where({"doc_id": {"$in": ["a", 7]}})
    with pytest.raises(ConfigError, match=r"kind is a string"):
        check_where({"$or": [{"doc_id": "a"}, {"kind": 1}]})
    # a float equals a stored int in Chroma and in Python
    assert check_where({"level": 2.0}) == {"level": 2.0}
    assert check_where({"empty_body": False, "page_start": {"$in": [1, 2]}})
    from proxypointer.retrieve.retriever import Retriever

    idx = make_index()
    assert not idx.ingest([DATA], show_progress=False).failed
    with pytest.raises(ConfigError, match="level is a number"):
        Retriever(idx).retrieve("parental leave", k=3, where={"level": "2"})
    assert Retriever(idx).retrieve("parental leave", k=3, where={"level": 2.0})
