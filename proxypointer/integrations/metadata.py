"""The metadata a framework's document or node carries for one section (no framework imported)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..retrieve.retriever import Section

__all__ = ["PROMPT_METADATA_KEYS", "section_metadata"]

#: The metadata a model should read beside a section's text: where it sits and how to cite it.
#: The rest (lines, scores, the outline of its children, ...) is for code; a framework that
#: puts metadata into prompts (LlamaIndex's ``MetadataMode.LLM``) leaves it out.
PROMPT_METADATA_KEYS = ("breadcrumb", "citation")


def section_metadata(section: Section) -> dict[str, Any]:
    """Return a section's metadata for a LangChain ``Document`` or a LlamaIndex ``TextNode``.

    Args:
        section: A retrieved section.

    Returns:
        ``doc_id``, ``node_id``, ``breadcrumb`` (titles, document title first), ``lines``
        (``[start, end]`` of the whole section, 1-based inclusive), ``text_lines`` (the
        delivered ``[first, last]``), ``pages`` (``[first, last]``, 1-based; ``[0, 0]`` without
        pages), ``citation``, ``delivery``, ``outline`` (list of dicts), ``score`` (cosine of the
        best chunk), ``rank_score``, ``title``, ``source``, ``kind``.
    """
    return {
        "doc_id": section.doc_id,
        "node_id": section.node_id,
        "breadcrumb": list(section.breadcrumb),
        "lines": [section.start_line, section.end_line],
        "text_lines": [section.text_start_line, section.text_end_line],
        "pages": [section.page_start, section.page_end],
        "citation": section.citation,
        "delivery": section.delivery,
        "outline": [e.to_dict() for e in section.outline],
        "score": section.score,
        "rank_score": section.rank_score,
        "title": section.title,
        "source": section.source,
        "kind": section.kind,
    }
