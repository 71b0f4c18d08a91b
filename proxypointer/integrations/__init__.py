"""Adapters to other frameworks, one module per framework, each imported only on demand.

- :mod:`proxypointer.integrations.langchain`: ``ProxyPointerRetriever``, a LangChain
  ``BaseRetriever`` (``pip install 'proxypointer[langchain]'``).
- :mod:`proxypointer.integrations.llamaindex`: ``ProxyPointerLlamaRetriever``, a LlamaIndex
  ``BaseRetriever`` (``pip install 'proxypointer[llamaindex]'``).

This package imports nothing itself, so ``import proxypointer`` never pays for a framework.
"""

__all__: list[str] = []
