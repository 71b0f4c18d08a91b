"""Structure-guided chunking: nodes -> chunks with breadcrumbs and line pointers.

Each node's *own* text (between its heading and its first child) is split on its own, never
across a heading, with langchain-text-splitters sized in word pieces of the embedding model's
tokenizer. The breadcrumb is prepended before embedding and budgeted, so that
``breadcrumb + text`` never exceeds the model's ``max_seq_length`` (shared case 24).
Noise sections (Contents, References, ...) are skipped by normalised title (case 29).
Documents without headings fall back to overlapping sliding windows (case 08).

What is split and embedded is the text *as embedded* (:class:`~proxypointer.chunk.embedtext.EmbeddedText`):
HTML and pipe tables rendered as text (:mod:`proxypointer.chunk.tables`, issue 13) and base64 data URIs
replaced by placeholders (:mod:`proxypointer.chunk.datauri`, case 31). A table is split between rows,
and a piece that starts inside a table repeats its title and column headers. Each chunk still
points at the exact source lines its piece came from.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..config import ChunkingConfig
from ..embed.tokenizer import TokenCounter
from ..errors import DocumentError
from ..lines import document_hash, split_lines
from ..tree.build import DocumentTree, Node
from ..tree.pages import PageMap
from ..tree.titles import is_noise_title, normalise_title
from .embedtext import EmbeddedText
from .ids import chunk_id
from .tables import markdown_parser

__all__ = [
    "REPEATED_CHUNKS_KEPT",
    "Chunk",
    "TokenCountCache",
    "add_pages",
    "breadcrumb_text",
    "chunk_document",
    "is_noise_title",
    "normalise_title",
]

logger = logging.getLogger(__name__)

#: Most chunks of one document stored with the same embedded text (shared case 18 keeps a
#: paragraph repeated inside a section twice). Chroma's HNSW graph links each vector to its
#: 16 nearest (``M``), and identical vectors are each other's nearest: 3,125 copies of one
#: chunk (a file of one word repeated) formed a clique that the search could not leave, and
#: the nearest 136 chunks of a question about parental pay were theirs (docs/evaluation.md, routing round).
#: Half of ``M`` leaves room for links out.
REPEATED_CHUNKS_KEPT = 8


@dataclass(frozen=True, slots=True)
class Chunk:
    """One embedded item: a piece of one node's own text, plus its pointer.

    Attributes:
        chunk_id: ``<doc_id>::<version>::<node_id>::<chunk_index>``: deterministic,
            unique even for identical texts and duplicate titles (case 18), and new for a new
            version of the document or of the pipeline (so a re-ingest never mixes versions).
        doc_id: Document id.
        doc_hash: Content hash of the normalised document text (hex).
        version: Index version of the document: a hash of its content and of the settings
            that shape its chunks (see ``pipeline``); by default ``doc_hash[:8]``.
        node_id: Node the chunk belongs to (``w0001``... for fallback windows).
        chunk_index: 0-based position among the node's chunks.
        kind: ``heading``, ``preamble`` or ``window``.
        title: Node title (document display title for windows).
        level: Node level (0 for preamble and windows).
        parent_id: Parent node id, ``""`` for roots, the preamble and windows.
        breadcrumb: Titles from the document title down to the node.
        start_line: First line of the whole section (node heading line), 1-based inclusive.
        end_line: Last line of the whole section (subtree), 1-based inclusive.
        body_end_line: Last line of the node's own text, 1-based inclusive.
        chunk_start_line: First line that the chunk text touches, 1-based inclusive.
        chunk_end_line: Last line that the chunk text touches, 1-based inclusive.
        text: The chunk's source text, an exact substring of the node's own text ("" for a
            breadcrumb-only chunk); a table piece holds its rows' markup, whole rows.
        embed_text: What is embedded: breadcrumb line, then (for a piece that starts inside a
            table) the table's title and column headers, then the text as embedded: tables
            rendered as text, base64 data-URI payloads replaced by placeholders.
        n_tokens: Word pieces of ``embed_text`` including special tokens; always <= the
            model's ``max_seq_length``.
        empty_body: True for the single breadcrumb-only chunk of a leaf with no own text.
        page_start: First PDF page of the whole section (``start_line..end_line``), 1-based,
            file order; 0 when the document has no pages (see :func:`add_pages`).
        page_end: Last PDF page of the whole section, 1-based inclusive; 0 without pages.
        chunk_page_start: First page of the chunk's lines (``chunk_start_line..chunk_end_line``).
        chunk_page_end: Last page of the chunk's lines.
    """

    chunk_id: str
    doc_id: str
    doc_hash: str
    version: str
    node_id: str
    chunk_index: int
    kind: str
    title: str
    level: int
    parent_id: str
    breadcrumb: tuple[str, ...]
    start_line: int
    end_line: int
    body_end_line: int
    chunk_start_line: int
    chunk_end_line: int
    text: str
    embed_text: str
    n_tokens: int
    empty_body: bool = False
    page_start: int = 0
    page_end: int = 0
    chunk_page_start: int = 0
    chunk_page_end: int = 0

    @property
    def content_hash(self) -> str:
        """SHA-1 of ``embed_text``: the key of the embedding cache."""
        return hashlib.sha1(self.embed_text.encode("utf-8")).hexdigest()


def add_pages(chunks: Sequence[Chunk], pages: PageMap) -> list[Chunk]:
    """Give each chunk the pages of its section and of its own lines.

    Pages come from :meth:`PageMap.pages` (``PageMap.page_range``: marker and blank lines do
    not count), so a section that starts just below a page's marker starts on that page, and
    one that ends where the next page's marker stands ends on the page before.

    Args:
        chunks: Chunks of one document (from :func:`chunk_document`).
        pages: The page map of the document's stored text.

    Returns:
        The chunks with ``page_start``/``page_end`` (section) and ``chunk_page_start``/
        ``chunk_page_end`` set; unchanged (all 0) when the document has no pages.
    """
    if not pages.has_pages:
        return list(chunks)
    out = []
    for c in chunks:
        ps, pe = pages.pages(c.start_line, c.end_line)
        cs, ce = pages.pages(c.chunk_start_line, c.chunk_end_line)
        out.append(dataclasses.replace(c, page_start=ps, page_end=pe, chunk_page_start=cs, chunk_page_end=ce))
    return out


def breadcrumb_text(breadcrumb: tuple[str, ...], separator: str = " > ") -> str:
    """Format the breadcrumb line prepended to chunk text, e.g. ``[Handbook > Leave > Sick leave]``."""
    return "[" + separator.join(breadcrumb) + "]" if breadcrumb else ""


class _Lines:
    """Character offsets of line starts, to map a substring back to 1-based lines."""

    def __init__(self, text: str, first_line: int) -> None:
        self.first_line = first_line
        self.starts = [0]
        pos = text.find("\n")
        while pos != -1:
            self.starts.append(pos + 1)
            pos = text.find("\n", pos + 1)

    def line_of(self, offset: int) -> int:
        return self.first_line + bisect.bisect_right(self.starts, offset) - 1


def _splitter(size: int, overlap: int, count: Callable[[str], int]):
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    return RecursiveCharacterTextSplitter(
        chunk_size=size,
        chunk_overlap=min(overlap, size // 2),
        length_function=count,
        separators=["\n\n", "\n", ". ", "; ", ", ", " ", ""],
        keep_separator="end",
        strip_whitespace=True,
    )


def _locate(text: str, pieces: list[str]) -> list[tuple[int, int]]:
    """Character spans ``[start, end)`` of each piece in ``text``, in order.

    langchain's ``add_start_index`` is wrong with token-sized overlapping chunks (docs/stack.md),
    so each piece is searched for from just after the previous piece's start.
    """
    spans: list[tuple[int, int]] = []
    cursor = 0
    for piece in pieces:
        at = text.find(piece, cursor)
        if at == -1:  # pragma: no cover - pieces are substrings by construction
            at = text.find(piece)
        if at == -1:
            raise DocumentError(
                "chunk text is not a substring of its node; the text splitter changed the text "
                "(a bug: please report it with the document)"
            )
        spans.append((at, at + len(piece)))
        cursor = at + 1
    return spans


@dataclass(frozen=True, slots=True)
class _Budget:
    """Token arithmetic for one breadcrumb: the room left for chunk text."""

    header: str
    header_tokens: int
    room: int


# Characters that str.split() treats as spaces but BERT's normaliser deletes (controls), so
# that the words around them would be joined: texts holding one are counted exactly.
_JOINING_CONTROLS = re.compile("[\x0b\x0c\x1c-\x1f\x85]")


def _sums_words(tokenizer: TokenCounter) -> bool:
    """Tell whether word-piece counts add up over whitespace-separated words for ``tokenizer``.

    Holds for tokenizers with a BERT normaliser and pre-tokenizer (all-MiniLM-L6-v2 and other
    BERT-family models): words are cut at whitespace and punctuation before word pieces.
    """
    backend = getattr(tokenizer, "backend", None)
    if backend is None:
        return False
    pre = type(getattr(backend, "pre_tokenizer", None)).__name__
    norm = type(getattr(backend, "normalizer", None)).__name__
    return pre == "BertPreTokenizer" and norm == "BertNormalizer"


class TokenCountCache:
    """A :class:`~proxypointer.embed.tokenizer.TokenCounter` that counts each distinct word once.

    ``RecursiveCharacterTextSplitter`` calls its length function on every candidate piece
    (about 350 calls per qasper paper, each re-tokenising up to a whole section: two thirds
    of the chunking time before this cache, docs/benchmarks.md). BERT-style tokenizers split
    on whitespace before cutting word pieces, so a text's count is the sum of its words'
    counts: each distinct word is tokenised once (in one batch per new text) and then looked
    up. For other tokenizers the sum is only the splitter's estimate and every chunk's embed
    text is counted exactly before it is accepted.

    Share one instance across the documents of a run (``Index.ingest`` does) so that words
    are counted once per run; it grows with the vocabulary of the corpus (a few MB).

    Args:
        tokenizer: The embedding model's tokenizer.

    Attributes:
        max_seq_length: As ``tokenizer``'s.
        n_special: As ``tokenizer``'s.
    """

    def __init__(self, tokenizer: TokenCounter) -> None:
        self.tok = tokenizer
        self.max_seq_length = tokenizer.max_seq_length
        self.n_special = tokenizer.n_special
        self.words: dict[str, int] = {}
        self.sums_words = _sums_words(tokenizer)

    def learn(self, text: str) -> None:
        """Count the words of ``text`` not seen yet, in one batch when the tokenizer can."""
        new = [w for w in dict.fromkeys(text.split()) if w not in self.words]
        if not new:
            return
        batch = getattr(self.tok, "count_batch", None)
        counts = batch(new) if batch is not None else [self.tok.count(w) for w in new]
        self.words.update(zip(new, counts, strict=True))

    def estimate(self, text: str) -> int:
        """Word pieces of ``text`` as the sum of its words' counts (special tokens excluded)."""
        words = self.words
        try:
            return sum(words[w] for w in text.split())
        except KeyError:
            self.learn(text)
            return sum(words[w] for w in text.split())

    def count(self, text: str) -> int:
        """Exact word pieces of ``text``, special tokens excluded."""
        if self.sums_words and not _JOINING_CONTROLS.search(text):
            return self.estimate(text)
        return self.tok.count(text)


class _Chunker:
    def __init__(self, config: ChunkingConfig, tokenizer: TokenCounter) -> None:
        self.config = config
        self.tok = tokenizer
        self.counts = tokenizer if isinstance(tokenizer, TokenCountCache) else TokenCountCache(tokenizer)
        # The separator between breadcrumb and text ("\n") adds no word piece for BERT
        # tokenizers; the fit check below measures the real embed text anyway.
        self.limit = tokenizer.max_seq_length - tokenizer.n_special
        self.truncated = 0
        self.md = markdown_parser()  # reused for every node's tables

    def shorten(self, text: str, max_tokens: int) -> str:
        """``text`` cut to at most ``max_tokens`` word pieces: whole lines first, then words."""
        lines = text.split("\n")
        while lines and self.counts.count("\n".join(lines)) > max_tokens:
            if len(lines) > 1:
                lines.pop()
                continue
            words = lines[0].split()
            while words and self.counts.count(" ".join(words)) > max_tokens:
                words.pop()
            lines = [" ".join(words)] if words else []
        return "\n".join(lines)

    def pieces(self, view: EmbeddedText, budget: _Budget, room: int, overlap: int) -> list[tuple[int, int, str, str]]:
        """Cut ``view.text`` into pieces that fit the model with their breadcrumb and table context.

        Args:
            view: A node's own text (or a whole document) as embedded.
            budget: Breadcrumb and room of the node.
            room: Target word pieces of a piece's text.
            overlap: Word pieces shared by consecutive pieces.

        Returns:
            ``(s_start, s_end, piece, context)`` per piece, in order: the source characters
            ``[s_start, s_end)`` of ``view.source`` the piece comes from, the piece (a
            substring of ``view.text``) and what to repeat before it (a table's title and
            column headers, ``""`` for most pieces).
        """
        text = view.text
        reserve = 0
        cap = max(0, (self.limit - budget.header_tokens) // 3)
        if view.tables and self.counts.count(text) > room:
            # A piece that starts inside a table repeats its title and headers: keep room.
            worst = max(self.counts.count(t.context) for t in view.tables)
            reserve = min(worst, cap) + 1 if worst else 0
            room = max(8, min(room, self.limit - budget.header_tokens - 1 - reserve))
        pieces = self.split(text, room, overlap, budget.header, reserve)
        out: list[tuple[int, int, str, str]] = []
        for piece, (a, b) in zip(pieces, _locate(text, pieces), strict=True):
            context = view.context_at(a)
            if context:
                context = self.shorten(context, cap)
                while context and not self.fits(self.embed_text(budget.header, f"{context}\n{piece}")):
                    context = self.shorten(context, self.counts.count(context) - 1)
            s, e = view.source_span(a, b)
            out.append((s, e, piece, context))
        return out

    def budget(self, breadcrumb: tuple[str, ...]) -> tuple[tuple[str, ...], _Budget]:
        sep = self.config.breadcrumb_separator
        header = breadcrumb_text(breadcrumb, sep)
        n = self.counts.count(header) if header else 0
        if n > self.limit // 2 and len(breadcrumb) > 2:
            original = breadcrumb
            # Keep the root and the nearest titles; elide the middle (case 24).
            tail = list(breadcrumb[1:])
            while len(tail) > 1:
                tail.pop(0)
                candidate = (breadcrumb[0], "...", *tail)
                header = breadcrumb_text(candidate, sep)
                n = self.counts.count(header)
                if n <= self.limit // 2:
                    break
            breadcrumb = (breadcrumb[0], "...", *tail)
            logger.warning(
                "breadcrumb of %d tokens shortened to %d: %s",
                self.counts.count(breadcrumb_text(original, sep)),
                n,
                header,
            )
        room = min(self.config.chunk_tokens, self.limit - n - 1)
        if room < 8:
            header = breadcrumb_text((breadcrumb[-1][:80],), sep)
            n = self.counts.count(header)
            room = min(self.config.chunk_tokens, self.limit - n - 1)
            logger.warning("breadcrumb too long for the model; kept only %r", header)
        return breadcrumb, _Budget(header, n, max(room, 8))

    def embed_text(self, header: str, text: str) -> str:
        if not header:
            return text
        return f"{header}\n{text}" if text else header

    def fits(self, text: str, reserve: int = 0) -> bool:
        return self.counts.count(text) + reserve <= self.limit

    def split(self, text: str, room: int, overlap: int, header: str, reserve: int = 0) -> list[str]:
        """Split ``text`` into pieces whose embed text fits the model, each a substring.

        ``reserve`` word pieces are kept free in every piece's embed text (for a table's
        repeated title and headers).
        """
        self.counts.learn(text)
        pieces = _splitter(room, overlap, self.counts.estimate).split_text(text)
        out: list[str] = []
        for piece in pieces:
            if self.fits(self.embed_text(header, piece), reserve):
                out.append(piece)
            elif room > 8:
                # Token counts are not additive across joins: re-split the piece tighter.
                out.extend(self.split(piece, max(8, int(room * 0.8)), 0, header, reserve))
            else:  # pragma: no cover - a single word piece over the limit cannot happen
                self.truncated += 1
                out.append(piece)
        return out


def _breadcrumb(tree: DocumentTree, node: Node, mode: str) -> tuple[str, ...]:
    path = (tree.title,) if node.kind == "preamble" else tree.title_path(node.node_id)
    if mode == "none":
        return ()
    if mode == "title":
        return (tree.title,)
    if mode == "section":
        return path if node.kind != "preamble" else ()
    if path and path[0] != tree.title:
        path = (tree.title, *path)
    return path


def chunk_document(
    tree: DocumentTree,
    text: str,
    tokenizer: TokenCounter,
    config: ChunkingConfig | None = None,
    *,
    lines: list[str] | None = None,
    version: str | None = None,
) -> list[Chunk]:
    """Cut a document into chunks, each pointing at its node's lines.

    Args:
        tree: Skeleton tree of ``text``.
        text: Normalised document text (``tree`` was built from it).
        tokenizer: Counts word pieces of the embedding model; gives ``max_seq_length``.
        config: Chunking options.
        lines: ``split_lines(text)`` when the caller already has it.
        version: Version tag for chunk ids; defaults to the first 8 hex digits of the
            document hash.

    Returns:
        Chunks in document order; an embedded text repeated in the document is kept at most
        :data:`REPEATED_CHUNKS_KEPT` times (:func:`_drop_repeats`). A heading node yields:
        nothing if it is noise (or, with ``skip_noise_descendants``, under noise) or if its
        own text is empty (or shorter than ``min_chars``) and it has children; one
        breadcrumb-only chunk (``empty_body``) if it is a leaf with no own text (case 11);
        else one or more chunks of its own text. A document without headings (or with
        ``strategy: windows``) yields sliding windows. Empty or blank documents yield nothing.
    """
    config = config or ChunkingConfig()
    lines = split_lines(text) if lines is None else lines
    chunker = _Chunker(config, tokenizer)
    doc_hash = document_hash(text)
    version = version or doc_hash[:8]
    if config.strategy == "windows" or not tree.has_headings:
        chunks = _windows(tree, lines, chunker, doc_hash, version, share_ranges=config.strategy != "windows")
    else:
        chunks = _sections(tree, lines, chunker, doc_hash, version)
    chunks = _drop_repeats(chunks, tree.doc_id)
    if chunker.truncated:
        logger.warning("%s: %d chunks exceed the model's max_seq_length", tree.doc_id, chunker.truncated)
    return chunks


def _drop_repeats(chunks: list[Chunk], doc_id: str) -> list[Chunk]:
    """Keep the first :data:`REPEATED_CHUNKS_KEPT` chunks of each embedded text of a document.

    The chunks kept of a node are numbered again from 0 (ids and ``chunk_index``); every kept
    chunk points at its own lines, and the node's section still covers all of its lines.
    """
    seen: dict[str, int] = {}
    kept = []
    for c in chunks:
        seen[c.embed_text] = seen.get(c.embed_text, 0) + 1
        if seen[c.embed_text] <= REPEATED_CHUNKS_KEPT:
            kept.append(c)
    if len(kept) == len(chunks):
        return chunks
    logger.warning("%s: %d chunks repeat a text already chunked %d times; not stored", doc_id,
                   len(chunks) - len(kept), REPEATED_CHUNKS_KEPT)
    out = []
    index: dict[str, int] = {}
    for c in kept:
        i = index.get(c.node_id, 0)
        index[c.node_id] = i + 1
        if i != c.chunk_index:
            c = dataclasses.replace(c, chunk_index=i, chunk_id=chunk_id(c.doc_id, c.version, c.node_id, i))
        out.append(c)
    return out


def _make(
    tree: DocumentTree,
    doc_hash: str,
    version: str,
    node_id: str,
    index: int,
    kind: str,
    title: str,
    level: int,
    parent_id: str,
    breadcrumb: tuple[str, ...],
    span: tuple[int, int, int],
    chunk_lines: tuple[int, int],
    piece: str,
    embed: str,
    n_tokens: int,
    empty: bool = False,
) -> Chunk:
    return Chunk(
        chunk_id=chunk_id(tree.doc_id, version, node_id, index),
        doc_id=tree.doc_id,
        doc_hash=doc_hash,
        version=version,
        node_id=node_id,
        chunk_index=index,
        kind=kind,
        title=title,
        level=level,
        parent_id=parent_id,
        breadcrumb=breadcrumb,
        start_line=span[0],
        end_line=span[1],
        body_end_line=span[2],
        chunk_start_line=chunk_lines[0],
        chunk_end_line=chunk_lines[1],
        text=piece,
        embed_text=embed,
        n_tokens=n_tokens,
        empty_body=empty,
    )


def _sections(tree: DocumentTree, lines: list[str], chunker: _Chunker, doc_hash: str, version: str) -> list[Chunk]:
    cfg = chunker.config
    noise = {normalise_title(t) for t in cfg.noise_titles}
    skipped: set[str] = set()
    chunks: list[Chunk] = []
    for node in tree.nodes:
        is_noise = node.kind == "heading" and normalise_title(node.title) in noise
        if is_noise or (cfg.skip_noise_descendants and node.parent_id in skipped):
            skipped.add(node.node_id)
            continue
        has_children = bool(tree.children(node.node_id))
        first, last = node.body_start_line, node.body_end_line
        body = "\n".join(lines[first - 1 : last]) if last >= first else ""
        view = EmbeddedText(body, chunker.md)
        stripped = view.text.strip()
        if not stripped or len(stripped) < cfg.min_chars:
            if has_children or node.kind == "preamble":
                continue
            breadcrumb, budget = chunker.budget(_breadcrumb(tree, node, cfg.breadcrumb) or (node.title,))
            embed = budget.header
            chunks.append(
                _make(tree, doc_hash, version, node.node_id, 0, node.kind, node.title, node.level, node.parent_id,
                      breadcrumb, (node.start_line, node.end_line, node.body_end_line),
                      (node.start_line, node.body_end_line), "", embed,
                      chunker.counts.count(embed) + chunker.tok.n_special, empty=True)
            )
            continue
        breadcrumb, budget = chunker.budget(_breadcrumb(tree, node, cfg.breadcrumb))
        index = _Lines(body, first)
        for i, (a, b, piece, context) in enumerate(chunker.pieces(view, budget, budget.room, cfg.overlap_tokens)):
            embed = chunker.embed_text(budget.header, f"{context}\n{piece}" if context else piece)
            chunks.append(
                _make(tree, doc_hash, version, node.node_id, i, node.kind, node.title, node.level, node.parent_id,
                      breadcrumb, (node.start_line, node.end_line, node.body_end_line),
                      (index.line_of(a), index.line_of(b - 1)), body[a:b], embed,
                      chunker.counts.count(embed) + chunker.tok.n_special)
            )
    return chunks


def _windows(
    tree: DocumentTree, lines: list[str], chunker: _Chunker, doc_hash: str, version: str, *, share_ranges: bool = False
) -> list[Chunk]:
    """Overlapping token windows over the whole document, each a pointer to its lines.

    With ``share_ranges`` (the fallback of a document without headings), consecutive windows
    over the same lines (a line longer than a window) are chunks of one node, so that a search
    returns those lines once; with ``strategy: windows`` (the ``flat`` baseline) each window is
    a node of its own.
    """
    cfg = chunker.config
    first = tree.front_matter_end + 1
    if first > len(lines):
        return []
    body = "\n".join(lines[first - 1 :])
    view = EmbeddedText(body, chunker.md)
    if not view.text.strip():
        return []
    breadcrumb, budget = chunker.budget(() if cfg.breadcrumb in ("none", "section") else (tree.title,))
    room = min(budget.room, cfg.window_tokens - budget.header_tokens - 1 if budget.header else cfg.window_tokens)
    index = _Lines(body, first)
    chunks: list[Chunk] = []
    prev_end = first - 1
    pieces = chunker.pieces(view, budget, max(room, 8), cfg.window_overlap_tokens)
    for i, (a, b, piece, context) in enumerate(pieces):
        start, end = index.line_of(a), index.line_of(b - 1)
        # Close gaps left by stripped blank lines so every line lies in some window.
        start = min(start, prev_end + 1)
        if i == len(pieces) - 1:
            end = len(lines)
        prev_end = max(prev_end, end)
        embed = chunker.embed_text(budget.header, f"{context}\n{piece}" if context else piece)
        if share_ranges and chunks and (chunks[-1].start_line, chunks[-1].end_line) == (start, end):
            node_id, index_in_node = chunks[-1].node_id, chunks[-1].chunk_index + 1
        else:
            node_id, index_in_node = f"w{(int(chunks[-1].node_id[1:]) if chunks else 0) + 1:04d}", 0
        chunks.append(
            _make(tree, doc_hash, version, node_id, index_in_node, "window", tree.title, 0, "", breadcrumb,
                  (start, end, end), (start, end), body[a:b], embed,
                  chunker.counts.count(embed) + chunker.tok.n_special)
        )
    return chunks
