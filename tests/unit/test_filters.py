"""Metadata filters: validated once, read the same way by every search path."""

from __future__ import annotations

import pytest

from proxypointer.errors import ConfigError
from proxypointer.filters import SUPPORTED_OPERATORS, check_where, doc_filter, filter_doc_ids, matches_where


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
