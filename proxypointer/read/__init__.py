"""The read stage, files -> text: discovery, one reader per file suffix, PDF conversion.

Modules:
    discovery  the files and folders given to ``ingest`` -> source files with unique doc ids
    readers    bytes -> normalised markdown with its page map, one reader per suffix
    pdf        PDF -> markdown with the page of every line (opendataloader-pdf, pypdf)

A PDF's structure (its bookmarks, printed contents and heading fonts) is written into the text
here with the rules of :mod:`proxypointer.tree`, so ``read`` sits above ``tree`` in the import
order while the data flows files -> text -> tree.
"""

__all__: list[str] = []
