"""The read path: query -> chunk hits -> sections -> context.

Modules:
    query         the sentences of a query and the question a focus ranking searches
    routing       which documents a query names by their titles (BM25 over titles)
    live          trees of live document versions, read from the registry and cached
    labels        labels a query names, looked up in live documents
    implied       sections a filing question implies without naming them
    hits          chunk hits made from ids, kept when live, filled from their records
    dense         query vectors (windows of a long query); dense and exact search; stored vectors
    signals       sections found by title, named by a label or implied, as chunk hits
    ranking       a query -> chunk hits, best first (routing and fusion); hits -> scored sections
    candidates    rank -> score -> place -> merge nested -> demote empty; the over-fetch loop
    stored        stored lines, word pieces per line and page maps of document versions
    delivery      what of a ranked section is delivered (subtree or own text + outline)
    sections      ``Section``, citations, sections built from ranked hits
    rerank/       an optional reranker after fusion (``rerank:``, off): a local cross-encoder or the llm: endpoint
    retriever     ``Retriever``: store and scope checks; k distinct (doc_id, node_id) -> whole ``Section``s
    context       sections -> blocks of source lines within a context budget
    references    cross-references of retrieved sections followed and added
    conversation  follow-up queries and sessions
    explain       why each returned section ranked: what fusion saw for it (read-only)

Reads a :class:`~proxypointer.store.folder.StoreView` (read-only); never imports :mod:`proxypointer.ingest`.
"""

__all__: list[str] = []
