"""proxypointer: Proxy-Pointer RAG over long structured markdown, without an LLM.

Headings become a skeleton tree; each section's own text is chunked with its breadcrumb and
embedded; a query's chunk hits are deduplicated by (doc_id, node_id) and the *whole section*
is sliced from the stored source, with a citation ``path#L<start>-L<end>``.

Importing this package loads no torch, sentence-transformers or chromadb: heavy names load on
first use.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from . import _moved
from ._moved import lazy_dir, lazy_names
from ._version import __version__ as __version__
from .config import ProxyPointerConfig, load_config
from .errors import (
    ConfigError,
    DocumentError,
    EmbeddingError,
    LLMError,
    LockError,
    MissingDependencyError,
    ProxyPointerError,
    StaleSourceError,
    StoreError,
    StoreNotFoundError,
)

if TYPE_CHECKING:
    from .answer import Answerer
    from .chunk.chunker import Chunk
    from .index import Index
    from .retrieve.context import Assembler, ContextBlock
    from .retrieve.conversation import ConversationRetriever, Turn
    from .retrieve.references import ReferenceFollower
    from .retrieve.retriever import Retriever, Section
    from .store.folder import Store
    from .tree.build import DocumentTree, Node


__all__ = [
    "Answerer",
    "Assembler",
    "Chunk",
    "ConfigError",
    "ContextBlock",
    "ConversationRetriever",
    "DocumentError",
    "DocumentTree",
    "EmbeddingError",
    "Index",
    "LLMError",
    "LockError",
    "MissingDependencyError",
    "Node",
    "ProxyPointerConfig",
    "ProxyPointerError",
    "ReferenceFollower",
    "Retriever",
    "Section",
    "StaleSourceError",
    "Store",
    "StoreError",
    "StoreNotFoundError",
    "Turn",
    "load_config",
]

_LAZY = {
    "Answerer": "answer",
    "Assembler": "retrieve.context",
    "Chunk": "chunk.chunker",
    "ContextBlock": "retrieve.context",
    "ConversationRetriever": "retrieve.conversation",
    "ReferenceFollower": "retrieve.references",
    "Store": "store.folder",
    "Turn": "retrieve.conversation",
    "Index": "index",
    "Retriever": "retrieve.retriever",
    "Section": "retrieve.retriever",
    "DocumentTree": "tree.build",
    "Node": "tree.build",
}

logging.getLogger(__name__).addHandler(logging.NullHandler())
_moved.install()

__getattr__ = lazy_names(__name__, {name: f".{module}" for name, module in _LAZY.items()})
__dir__ = lazy_dir(globals(), _LAZY)
