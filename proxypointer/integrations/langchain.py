"""LangChain retriever over a proxypointer index: whole sections as ``Document``s.

Each ``Document`` holds one delivered section: ``page_content`` is the section's delivered
text (exact source lines ``text_lines``: the whole section, or for a big one its own text; see
``proxypointer.retrieve.delivery``), ``id`` is ``<doc_id>#<node_id>``, and ``metadata`` carries
``doc_id``, ``node_id``, ``breadcrumb`` (list of titles, document title first), ``lines``
(``[start_line, end_line]`` of the whole section, 1-based inclusive), ``text_lines`` (the
delivered ``[first, last]``), ``citation`` (``<doc>.md#L<first>-L<last>`` of the delivered
lines), ``delivery`` (``subtree``, ``own_text`` or ``excerpt``), ``outline`` (the children
of a section not delivered whole: a list of ``{node_id, title, start_line, end_line,
citation}``), ``score`` (cosine similarity of the best chunk, higher is better),
``rank_score`` (what ordered the sections), plus ``title``, ``source`` and ``kind``.

As LangChain retrievers do, ``invoke`` takes the number of sections per call
(``retriever.invoke(query, k=1)``), and the filters too (``doc_ids``, ``source_prefix``,
``where``); the constructor's values are the defaults. An empty ``doc_ids`` list selects no
document.

Needs ``langchain-core`` (``pip install 'proxypointer[langchain]'``).

Example:
    >>> from proxypointer.integrations.langchain import ProxyPointerRetriever  # doctest: +SKIP
    >>> retriever = ProxyPointerRetriever.from_store(".proxypointer", k=3)
    >>> docs = retriever.invoke("How is parental leave paid?")
    >>> docs[0].metadata["citation"]
    'employee-handbook.md#L129-L135'

"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, MissingDependencyError
from .metadata import section_metadata

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict, Field, PrivateAttr
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError(
        "langchain-core is not installed; pip install 'proxypointer[langchain]' to use "
        "proxypointer.integrations.langchain"
    ) from err

if TYPE_CHECKING:
    from ..config import ProxyPointerConfig
    from ..embed.embedder import Embedder
    from ..retrieve.retriever import Section

__all__ = ["ProxyPointerRetriever", "section_to_document"]

logger = logging.getLogger(__name__)

#: Options ``invoke`` takes per call (each defaults to the field of the same name).
_CALL_OPTIONS = frozenset({"k", "doc_ids", "source_prefix", "where"})


def section_to_document(section: Section) -> Document:
    """Turn a :class:`~proxypointer.retrieve.retriever.Section` into a LangChain ``Document``."""
    return Document(
        id=f"{section.doc_id}#{section.node_id}",
        page_content=section.text,
        metadata=section_metadata(section),
    )


class ProxyPointerRetriever(BaseRetriever):
    """A LangChain retriever returning whole proxypointer sections, best first.

    Sync (``invoke``/``batch``) and async (``ainvoke``/``abatch``) calls all run on one
    worker thread owned by this retriever: the index's SQLite registry belongs to the thread
    that opened it, so build the retriever before using its ``Index`` on another thread
    (:meth:`from_store` does that for you).

    Attributes:
        retriever: The :class:`~proxypointer.retrieve.retriever.Retriever` to query.
        k: Sections per query (default ``retrieval.k`` of the index config); ``invoke(query,
            k=n)`` overrides it for one call.
        doc_ids: Only search these documents (an empty list: none).
        source_prefix: Only search documents whose doc_id starts with this prefix.
        where: Extra Chroma metadata filter, e.g. ``{"kind": "heading"}``.

    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: Any = Field(description="a proxypointer.retrieve.retriever.Retriever")
    k: int | None = None
    doc_ids: list[str] | None = None
    source_prefix: str | None = None
    where: dict[str, Any] | None = None

    _pool: ThreadPoolExecutor | None = PrivateAttr(default=None)

    @classmethod
    def from_store(
        cls,
        store: str | Path | None = None,
        config: ProxyPointerConfig | None = None,
        embedder: Embedder | None = None,
        **kwargs: Any,
    ) -> ProxyPointerRetriever:
        """Open an index and wrap it.

        Args:
            store: Store folder (default ``store.path`` of the config).
            config: Configuration (default: built-in defaults).
            embedder: Embedding model (default: the config's sentence-transformers model).
            **kwargs: Fields of this class (``k``, ``doc_ids``, ``source_prefix``, ``where``).

        Returns:
            The retriever.

        """
        from ..index import Index
        from ..retrieve.retriever import Retriever

        return cls(retriever=Retriever(Index(store, config, embedder)), **kwargs)

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="proxypointer-retriever"
            )
        return self._pool

    def _documents(self, query: str, options: dict[str, Any]) -> list[Document]:
        unknown = sorted(set(options) - _CALL_OPTIONS)
        if unknown:
            raise ConfigError(
                f"ProxyPointerRetriever.invoke: unknown option(s) {unknown}; valid: {sorted(_CALL_OPTIONS)}"
            )
        values = {name: options.get(name, getattr(self, name)) for name in _CALL_OPTIONS}
        sections = self.retriever.retrieve(
            query,
            k=values["k"],
            where=values["where"],
            doc_ids=values["doc_ids"],
            source_prefix=values["source_prefix"],
        )
        logger.debug("%d sections for %r", len(sections), query)
        return [section_to_document(s) for s in sections]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return self._executor().submit(self._documents, query, kwargs).result()

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return await asyncio.wrap_future(self._executor().submit(self._documents, query, kwargs))

    def close(self) -> None:
        """Release the index's registry and stop the worker thread (a later call starts anew)."""
        if self._pool is not None:
            self._pool.submit(self.retriever.index.close).result()
            self._pool.shutdown(wait=True)
            self._pool = None
