"""Record codec: the registry's copy of a chunk's Chroma record."""

from __future__ import annotations

import zlib

from proxypointer.store.records import (
    decode_record,
    encode_record,
    lexical_text,
    record_content_hash,
    try_decode_record,
)

POINTER = {"doc_id": "d", "doc_hash": "h", "version": "v1", "node_id": "n", "start_line": 1, "end_line": 3}


def test_a_record_round_trips_unicode_text_and_metadata():
    meta = {**POINTER, "breadcrumb": "Guide > Kettle", "content_hash": "c" * 40}
    rec = encode_record("héllo ✓", meta)
    assert decode_record(rec) == ("héllo ✓", meta) == try_decode_record(rec)
    assert record_content_hash(rec) == "c" * 40


def test_a_copy_without_typed_pointer_metadata_is_not_used():
    assert try_decode_record(encode_record("t", {**POINTER, "start_line": "1"})) is None  # mistyped
    assert try_decode_record(encode_record("t", {"doc_id": "d"})) is None  # pointer missing
    assert try_decode_record(b"not zlib") is None
    assert try_decode_record(zlib.compress(b'{"text": 1}')) is None  # not [text, metadata]
    assert record_content_hash(b"not zlib") == "" == record_content_hash(encode_record("t", POINTER))


def test_the_lexical_row_of_a_record_leads_with_its_breadcrumb():
    assert lexical_text("descale monthly", {"breadcrumb": "Guide > Kettle"}) == "Guide > Kettle\ndescale monthly"
    assert lexical_text("descale monthly", {}) == "descale monthly"
