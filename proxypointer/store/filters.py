"""Metadata filters: one meaning on every search path.

A query's ``where`` filter reaches Chroma (dense hits), the exact numpy search of a small
``doc_id`` filter, the registry's FTS5 search (lexical hits, checked by :func:`matches_where`)
and title routing. :func:`check_where` refuses, at the edge, any operator that one of them could
not honour, instead of letting a path silently match nothing (BM25 dropped every hit for
``$gt`` before); the operators are Chroma's, with Chroma's meaning.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError

__all__ = [
    "FILTER_FIELDS", "FILTER_FIELD_TYPES", "NO_DOCUMENT", "SUPPORTED_OPERATORS", "check_where", "doc_filter",
    "filter_doc_ids", "matches_where", "names_field", "sources_to_doc_ids",
]

#: The chunk metadata fields a filter can name: every field Chroma stores with a chunk
#: (:func:`proxypointer.store.chroma.chunk_metadata`; a test keeps the two in step). A filter on any
#: other field would match nothing on every path, so it is refused by name.
FILTER_FIELDS = (
    "doc_id", "doc_hash", "version", "node_id", "chunk_index", "kind", "title", "level", "parent_id",
    "breadcrumb", "breadcrumb_json", "start_line", "end_line", "body_end_line", "chunk_start_line",
    "chunk_end_line", "source", "content_hash", "n_tokens", "empty_body", "page_start", "page_end",
    "chunk_page_start", "chunk_page_end",
)
_FIELDS = frozenset(FILTER_FIELDS)

#: The type of each field's stored value: ``str``, ``int`` (a number: Chroma matches ``2.0``
#: to a stored ``2``) or ``bool``. A value of another type matches nothing in Chroma (``"2"``
#: is not ``2``, ``1`` is not ``True``) while Python's ``==`` says ``True == 1``, so the lexical
#: path would disagree with the dense one: such a value is refused by :func:`check_where`.
FILTER_FIELD_TYPES: dict[str, type] = {
    name: (int if name in {"chunk_index", "level", "start_line", "end_line", "body_end_line", "chunk_start_line",
                           "chunk_end_line", "n_tokens", "page_start", "page_end", "chunk_page_start",
                           "chunk_page_end"}
           else bool if name == "empty_body" else str)
    for name in FILTER_FIELDS
}
_TYPE_NAMES = {str: "a string", int: "a number", bool: "true or false"}

#: Metadata filter operators honoured by every search path (Chroma, the exact search, lexical
#: hits and title routing), with Chroma's meaning.
SUPPORTED_OPERATORS = ("$and", "$or", "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin")

_FIELD_OPS = frozenset(SUPPORTED_OPERATORS) - {"$and", "$or"}
_ORDER_OPS = frozenset({"$gt", "$gte", "$lt", "$lte"})


def check_where(where: dict[str, Any] | None, *, where_name: str = "where") -> dict[str, Any] | None:
    """Validate a Chroma-style metadata filter and put it in the form Chroma accepts.

    Every search path must read a filter the same way: Chroma applies it to dense hits,
    :func:`matches_where` to lexical hits. An operator outside :data:`SUPPORTED_OPERATORS` is
    refused here rather than silently matching nothing on one path.

    Args:
        where: ``{field: value}``, ``{field: {op: value}}``, ``{"$and": [...]}`` or
            ``{"$or": [...]}``; several fields in one mapping mean all of them.
        where_name: Name used in error messages.

    Returns:
        ``None`` for no condition (``None`` or ``{}``); otherwise the filter with several
        fields of one mapping joined by ``$and`` and one-clause ``$and``/``$or`` unwrapped
        (Chroma refuses both forms).

    Raises:
        ConfigError: Naming the operator or value that is not supported, and the supported
            operators; a field outside :data:`FILTER_FIELDS`, and those fields; or a value
            of another type than the field's (:data:`FILTER_FIELD_TYPES`: ``{"level": "2"}``).
    """
    if where is None:
        return None
    if not isinstance(where, dict):
        raise ConfigError(f"{where_name}: expected a mapping, got {type(where).__name__}")
    if not where:
        return None
    clauses = [_check_clause(key, value, where_name) for key, value in where.items()]
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _check_clause(key: str, value: Any, where_name: str) -> dict[str, Any]:
    supported = ", ".join(SUPPORTED_OPERATORS)
    if key in ("$and", "$or"):
        if not isinstance(value, list) or not value:
            raise ConfigError(f"{where_name}: {key} expects a non-empty list of filters, got {value!r}")
        parts = [check_where(v, where_name=where_name) for v in value]
        parts = [p for p in parts if p is not None]
        if not parts:
            return {}
        return parts[0] if len(parts) == 1 else {key: parts}
    if key.startswith("$"):
        raise ConfigError(f"{where_name}: operator {key!r} is not supported; supported: {supported}")
    if isinstance(value, dict):
        if len(value) != 1:
            raise ConfigError(f"{where_name}.{key}: expected one operator, got {sorted(value)}")
        ((op, arg),) = value.items()
        if op not in _FIELD_OPS:
            raise ConfigError(f"{where_name}.{key}: operator {op!r} is not supported; supported: {supported}")
        if op in _ORDER_OPS and (isinstance(arg, bool) or not isinstance(arg, (int, float))):
            raise ConfigError(f"{where_name}.{key}: {op} expects a number, got {arg!r}")
        if op in ("$in", "$nin") and not isinstance(arg, (list, tuple)):
            raise ConfigError(f"{where_name}.{key}: {op} expects a list, got {arg!r}")
        clause = {key: {op: list(arg) if op in ("$in", "$nin") else arg}}
        values = list(arg) if op in ("$in", "$nin") else [arg]
    elif not isinstance(value, (str, int, float, bool)):
        raise ConfigError(f"{where_name}.{key}: expected a str, int, float or bool, got {value!r}")
    else:
        clause = {key: value}
        values = [value]
    if key not in _FIELDS:
        raise ConfigError(
            f"{where_name}: no chunk has the field {key!r}, so the filter would match nothing;"
            f" fields: {', '.join(FILTER_FIELDS)}"
        )
    kind = FILTER_FIELD_TYPES[key]
    for v in values:
        if not _of_type(v, kind):
            raise ConfigError(
                f"{where_name}.{key}: {key} is {_TYPE_NAMES[kind]} in every chunk, so {v!r} would match"
                f" nothing; write {key!r} with {_TYPE_NAMES[kind]}"
            )
    return clause


def _of_type(value: Any, kind: type) -> bool:
    """Whether a filter value can equal a stored value of this type (``bool`` is no number)."""
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, str)


def matches_where(metadata: dict[str, Any], where: dict[str, Any] | None) -> bool:
    """Evaluate a filter checked by :func:`check_where` on one chunk's metadata, as Chroma does.

    A field missing from the metadata matches only ``$ne`` and ``$nin``; order operators
    (``$gt``...) compare numbers only.
    """
    if not where:
        return True
    for key, cond in where.items():
        if key == "$and":
            if not all(matches_where(metadata, c) for c in cond):
                return False
        elif key == "$or":
            if not any(matches_where(metadata, c) for c in cond):
                return False
        elif isinstance(cond, dict):
            if not all(_matches_op(metadata.get(key), op, arg) for op, arg in cond.items()):
                return False
        elif metadata.get(key) != cond:
            return False
    return True


def _matches_op(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return value == arg
    if op == "$ne":
        return value != arg
    if op == "$in":
        return value in arg
    if op == "$nin":
        return value not in arg
    if value is None or isinstance(value, (bool, str)) or not isinstance(value, (int, float)):
        return False
    return {"$gt": value > arg, "$gte": value >= arg, "$lt": value < arg, "$lte": value <= arg}[op]


def filter_doc_ids(where: dict[str, Any] | None) -> list[str] | None:
    """Doc ids allowed by a filter that is only a ``doc_id`` equality, ``$eq`` or ``$in``; else ``None``."""
    if not where or set(where) != {"doc_id"}:
        return None
    cond = where["doc_id"]
    if isinstance(cond, str):
        return [cond]
    if isinstance(cond, dict) and set(cond) == {"$in"} and isinstance(cond["$in"], list):
        return [str(c) for c in cond["$in"]]
    if isinstance(cond, dict) and set(cond) == {"$eq"} and isinstance(cond["$eq"], str):
        return [cond["$eq"]]
    return None


#: A doc id no document has (doc ids are never empty): a filter that selects no document.
NO_DOCUMENT = ""


def names_field(where: dict[str, Any] | None, field: str) -> bool:
    """Whether a filter checked by :func:`check_where` has a condition on ``field``."""
    if not where:
        return False
    return any(
        any(names_field(c, field) for c in cond) if key in ("$and", "$or") else key == field
        for key, cond in where.items()
    )


def sources_to_doc_ids(where: dict[str, Any] | None, sources: dict[str, str]) -> dict[str, Any] | None:
    """Rewrite every ``source`` condition of a filter as the documents whose *current* source meets it.

    A chunk's ``source`` metadata is the path it was embedded from; a document that moved or
    was renamed with the same text keeps its chunks (ingest re-embeds nothing) and the
    registry records its new path. So ``{"source": path}`` is answered from the registry: the
    documents whose current source path meets the condition (issue 32), on every search path.

    Args:
        where: A filter checked by :func:`check_where`.
        sources: ``doc_id -> current source path`` of the live documents.

    Returns:
        The filter with each ``{"source": cond}`` replaced by a ``doc_id`` condition on the
        documents meeting ``cond`` (:data:`NO_DOCUMENT` when none does).
    """
    if not where:
        return where
    out: dict[str, Any] = {}
    for key, cond in where.items():
        if key in ("$and", "$or"):
            out[key] = [sources_to_doc_ids(c, sources) for c in cond]
        elif key == "source":
            ids = sorted(d for d, src in sources.items() if matches_where({"source": src}, {"source": cond}))
            out["doc_id"] = {"$in": ids or [NO_DOCUMENT]}
        else:
            out[key] = cond
    return out


def doc_filter(doc_ids: Sequence[str]) -> dict[str, Any]:
    """Chroma filter for a non-empty list of doc ids."""
    return {"doc_id": doc_ids[0]} if len(doc_ids) == 1 else {"doc_id": {"$in": list(doc_ids)}}
