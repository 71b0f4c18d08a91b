"""LlamaIndex retriever over a proxypointer index: whole sections as ``NodeWithScore``.

Each result holds one delivered section: the node is a ``TextNode`` whose ``text`` is the
section's delivered text (exact source lines; the whole section, or for a big one its own text
or an excerpt: ``proxypointer.retrieve.delivery``), whose ``id_`` is ``<doc_id>#<node_id>``, and
whose ``metadata`` carries what the LangChain retriever's documents carry
(:func:`proxypointer.integrations.langchain.section_to_document`): ``doc_id``, ``node_id``,
``breadcrumb`` (titles, document title first), ``lines`` (``[start, end]`` of the whole
section, 1-based inclusive), ``text_lines``, ``pages`` (``[first, last]``, 1-based; ``[0, 0]``
without pages), ``citation``, ``delivery``, ``outline``, ``score``, ``rank_score``, ``title``,
``source``, ``kind``. The score of a ``NodeWithScore`` is the cosine similarity of the
section's best chunk (higher is better; what LlamaIndex's similarity postprocessors expect);
the order is proxypointer's ranking (``rank_score``).

Needs ``llama-index-core`` (``pip install 'proxypointer[llamaindex]'``).

Example:
    >>> from proxypointer.integrations.llamaindex import ProxyPointerLlamaRetriever  # doctest: +SKIP
    >>> retriever = ProxyPointerLlamaRetriever.from_store(".proxypointer", k=3)
    >>> hits = retriever.retrieve("How is parental leave paid?")
    >>> hits[0].node.metadata["citation"]
    'employee-handbook.md#L129-L135'
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import MissingDependencyError
from .metadata import PROMPT_METADATA_KEYS, section_metadata

try:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError(
        "llama-index-core is not installed; pip install 'proxypointer[llamaindex]' to use "
        "proxypointer.integrations.llamaindex"
    ) from err

if TYPE_CHECKING:
    from ..config import ProxyPointerConfig
    from ..embed.embedder import Embedder
    from ..retrieve.retriever import Retriever, Section

__all__ = ["ProxyPointerLlamaRetriever", "section_to_node"]


def section_to_node(section: Section) -> NodeWithScore:
    """Turn a :class:`~proxypointer.retrieve.retriever.Section` into a LlamaIndex ``NodeWithScore``.

    The node's metadata is :func:`~proxypointer.integrations.metadata.section_metadata`; what
    LlamaIndex puts into a prompt or an embedding with the text (``MetadataMode.LLM`` /
    ``EMBED``) is only :data:`~proxypointer.integrations.metadata.PROMPT_METADATA_KEYS`
    (breadcrumb and citation). The score is the cosine of the section's best chunk, so the
    nodes come in rank order but their scores need not descend.
    """
    metadata = section_metadata(section)
    code_only = [k for k in metadata if k not in PROMPT_METADATA_KEYS]  # never in a prompt or an embedding
    node = TextNode(
        id_=f"{section.doc_id}#{section.node_id}",
        text=section.text,
        metadata=metadata,
        excluded_llm_metadata_keys=code_only,
        excluded_embed_metadata_keys=code_only,
    )
    return NodeWithScore(node=node, score=section.score)


class ProxyPointerLlamaRetriever(BaseRetriever):
    """A LlamaIndex retriever returning whole proxypointer sections, best first.

    ``retrieve``/``aretrieve`` take a string or a ``QueryBundle`` (its ``query_str`` is
    searched; proxypointer embeds it itself). Sync and async calls run on one worker thread owned
    by this retriever: the index's SQLite registry belongs to the thread that opened it.

    Args:
        retriever: The :class:`~proxypointer.retrieve.retriever.Retriever` to query.
        k: Sections per query (default ``retrieval.k`` of the index config).
        doc_ids: Only search these documents (an empty list: none).
        source_prefix: Only search documents whose doc_id starts with this prefix.
        where: Extra metadata filter, e.g. ``{"kind": "heading"}``.
        **kwargs: ``BaseRetriever``'s own (``callback_manager``, ``verbose``, ...).

    Raises:
        ConfigError: From a query, when ``k`` < 1, the query is empty or a filter unsupported.
    """

    def __init__(
        self,
        retriever: Retriever,
        k: int | None = None,
        doc_ids: list[str] | None = None,
        source_prefix: str | None = None,
        where: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.retriever = retriever
        self.k = k
        self.doc_ids = doc_ids
        self.source_prefix = source_prefix
        self.where = where
        self._pool: ThreadPoolExecutor | None = None

    @classmethod
    def from_store(
        cls,
        store: str | Path | None = None,
        config: ProxyPointerConfig | None = None,
        embedder: Embedder | None = None,
        **fields: Any,
    ) -> ProxyPointerLlamaRetriever:
        """Open an index and wrap it.

        Args:
            store: Store folder (default ``store.path`` of the config).
            config: Configuration (default: built-in defaults).
            embedder: Embedding model (default: the config's model).
            **fields: ``k``, ``doc_ids``, ``source_prefix``, ``where`` and ``BaseRetriever``'s
                arguments.

        Returns:
            The retriever; its index is opened on the retriever's worker thread.
        """
        from ..index import Index
        from ..retrieve.retriever import Retriever

        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="proxypointer-llamaindex")
        inner = pool.submit(lambda: Retriever(Index(store, config, embedder))).result()
        out = cls(inner, **fields)
        out._pool = pool
        return out

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="proxypointer-llamaindex")
        return self._pool

    def _nodes(self, query: str) -> list[NodeWithScore]:
        sections = self.retriever.retrieve(query, k=self.k, where=self.where, doc_ids=self.doc_ids,
                                           source_prefix=self.source_prefix)
        return [section_to_node(s) for s in sections]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._executor().submit(self._nodes, query_bundle.query_str).result()

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.wrap_future(self._executor().submit(self._nodes, query_bundle.query_str))

    def close(self) -> None:
        """Release the index's registry and stop the worker thread (a later call starts anew)."""
        if self._pool is not None:
            self._pool.submit(self.retriever.index.close).result()
            self._pool.shutdown(wait=True)
            self._pool = None
