"""pypdf's own warnings, kept out of a user's output while proxypointer reads a PDF.

pypdf logs a warning for each damaged object it reads past ("EOF marker not found", "Object 3 0
not defined.", "Unknown destination"), without the file's name and once per reader, so one
damaged file prints the same line several times. proxypointer says what happened to the file
itself, in one line that names it; pypdf's records are hidden while it reads, from WARNING down.
An application that sets the ``pypdf`` logger's level itself (``proxypointer -v`` sets
WARNING) gets what it asked for.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["pypdf_warnings_hidden"]

_LOCK = threading.Lock()
_depth = 0
_raised = False


@contextmanager
def pypdf_warnings_hidden() -> Iterator[None]:
    """Raise the ``pypdf`` logger to ERROR while the block runs, unless its level was set.

    Safe across threads and nested blocks (the run-in title reader reads a PDF in a thread
    while the converter's probe reads it too): the level is put back when the last block ends.
    Only a logger left at NOTSET (nobody chose a level) is raised.
    """
    global _depth, _raised
    log = logging.getLogger("pypdf")
    with _LOCK:
        if _depth == 0:
            _raised = log.level == logging.NOTSET
            if _raised:
                log.setLevel(logging.ERROR)
        _depth += 1
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0 and _raised:
                log.setLevel(logging.NOTSET)
                _raised = False
