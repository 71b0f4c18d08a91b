"""The chunk stage, tree -> chunks: each node's own text split inside its boundaries, a breadcrumb first.

Modules:
    chunker    nodes -> ``Chunk``s with breadcrumbs, line and page pointers; noise filter; windows
    embedtext  the text a chunk embeds, mapped back to the source characters it came from
    tables     HTML and pipe tables embedded as compact text (parsing in ``_tableparse``)
    datauri    inline ``data:`` payloads replaced by short placeholders

Imports :mod:`proxypointer.tree` and :mod:`proxypointer.embed` (to count word pieces), nothing
above.
"""

__all__: list[str] = []
