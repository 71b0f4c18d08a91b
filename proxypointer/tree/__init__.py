"""The tree stage, text -> tree: the skeleton tree of a document, no LLM.

Modules:
    build          markdown text -> ``DocumentTree`` of ``Node``s with 1-based inclusive line ranges
    markdown       markdown-it-py set up for heading detection (block tokens, top-level headings)
    headings       converter-output modes: headings PDF/DOCX converters emit without ``#``
    titles         title normalisation, numbering and noise rules (the one place for them)
    pages          page markers in converted text: the PDF page of every line
    outline        outlines (PDF bookmarks, a small YAML/JSON file): titles, pages, nesting
    outlinetext    an outline written into converted text as headings
    contentslines  the lines of a printed table of contents and their entries
    contents       a printed table of contents read as an outline
    headingstyles  heading levels from a converted PDF's fonts
    labels         labels of a document ("Note 14", "Table 5.3") and labels named in a query
    references     in-document cross-references and their graph
    check          inspecting a tree: PageIndex JSON, a readable outline, a validation report

Imports only :mod:`proxypointer.lines`, :mod:`proxypointer.config` and the errors: it knows
nothing of files, chunks, vectors or stores. ``from proxypointer.tree import build_tree`` keeps
working as before the package was split (the names of the old ``proxypointer.tree`` module).
"""

from __future__ import annotations

from .._moved import lazy_dir, lazy_names

__all__ = [
    "DocumentTree",
    "Heading",
    "HeadingReport",
    "Node",
    "PREAMBLE_ID",
    "build_tree",
    "explain_headings",
    "find_headings",
    "normalise_text",
    "slice_lines",
    "split_lines",
]

_EXPORTS = {
    "PREAMBLE_ID": ".build",
    "DocumentTree": ".build",
    "Heading": ".build",
    "HeadingReport": ".build",
    "Node": ".build",
    "build_tree": ".build",
    "explain_headings": ".build",
    "find_headings": ".build",
    "normalise_text": "..lines",
    "slice_lines": "..lines",
    "split_lines": "..lines",
}

__getattr__ = lazy_names(__name__, _EXPORTS)
__dir__ = lazy_dir(globals(), _EXPORTS)
