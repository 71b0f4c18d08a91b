r"""Document ids and other text a user types: one Unicode normal form, and text that can be stored.

A file system may store a name composed (NFC, ``Café``: what keyboards type and Linux file
systems usually keep) or decomposed (NFD, ``Cafe`` + U+0301: what macOS file systems and many
zip tools write). Both show the same on screen, so doc ids, prefixes and filters are compared
in one form, NFC (Unicode Standard Annex #15): an id is made NFC when discovery derives it
from a path, and every id or prefix a user gives is made NFC before it is looked up.

Two kinds of names cannot be ids:

- a name that is not valid UTF-8 (a Latin-1 ``caf\xe9.md`` from an old zip or SMB tree):
  Python reads it with lone surrogates (PEP 383), which SQLite, Chroma and JSON cannot store;
- a name holding a control character (a newline, a tab, an escape): printed in ``status``
  or a citation it would split or fake output lines.

Both are reported by discovery with the name escaped, and the rest of the run goes on. Text
sent by a client (a query, a doc id, a prefix) with a lone surrogate is refused by
:func:`check_text` (a :class:`~proxypointer.errors.ConfigError`: a CLI error; the servers
answer it as a bad request).
"""

from __future__ import annotations

import re
import unicodedata

from .errors import ConfigError

__all__ = ["check_text", "escaped", "is_utf8", "name_problem", "normalize_doc_id", "terminal_text"]

_SURROGATE = re.compile(r"[\ud800-\udfff]")
# C0 and C1 controls and DEL: what a terminal treats as layout or escapes.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def normalize_doc_id(text: str) -> str:
    r"""Return a doc id, a prefix or a path fragment in Unicode NFC (see the module docstring).

    Args:
        text: An id as derived from a path or typed by a user.

    Returns:
        The NFC form (``"Cafe\u0301-menu"`` -> ``"Café-menu"``); text with lone surrogates
        is returned unchanged (see :func:`name_problem`).
    """
    return unicodedata.normalize("NFC", text) if is_utf8(text) else text


def escaped(text: str) -> str:
    r"""Return ``text`` printable on one line: undecodable bytes as ``\xNN``, controls escaped.

    Args:
        text: A name as the file system gave it (lone surrogates stand for undecodable bytes).

    Returns:
        The name with each undecodable byte as ``\xNN`` and each control character as its
        Python escape (``\n``, ``\t``, ``\x1b``); other characters unchanged.
    """
    out = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        elif _SURROGATE.match(ch):
            out.append(f"\\u{code:04x}")
        elif _CONTROL.match(ch):
            out.append(repr(ch)[1:-1])
        else:
            out.append(ch)
    return "".join(out)


_TERMINAL_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_text(text: str) -> str:
    r"""Return document text safe to print to a terminal: lines and tabs kept, other controls escaped.

    A document may hold escape sequences (``\x1b[31m``), a bell or a carriage return that would
    recolour, ring or overwrite the terminal that prints it; each such character is shown as
    its Python escape (``\x1b``, ``\x07``, ``\r``). ``\n`` and ``\t`` stay as they are, so
    sections print with their lines. JSON output keeps the exact text.

    Example:
        >>> terminal_text("Title\x1b[31m red\n\tnext")
        'Title\\x1b[31m red\n\tnext'
    """
    if not _TERMINAL_CONTROL.search(text):
        return text
    return _TERMINAL_CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def is_utf8(text: str) -> bool:
    """Tell whether ``text`` can be written as UTF-8 (it holds no lone surrogate)."""
    return _SURROGATE.search(text) is None


def name_problem(name: str) -> str:
    """Tell why a file's path cannot give a doc id, or return ``""`` when it can.

    Args:
        name: The path (or the part of it that becomes the id).

    Returns:
        ``"its name is not valid UTF-8"``, ``"its name holds a control character"``, ``"its
        name gives the doc id '..'"`` (a file ``...md``: paths and URLs read ``.`` and ``..`` as
        steps, so a citation or a link could not name it) or ``""``.
    """
    if not is_utf8(name):
        return "its name is not valid UTF-8 (rename it, e.g. with `convmv -f latin1 -t utf8`)"
    if _CONTROL.search(name):
        return "its name holds a control character such as a newline or a tab (rename it)"
    steps = [part for part in name.replace("\\", "/").split("/") if part in (".", "..")]
    if steps:
        return f"its name gives the doc id part {steps[0]!r}, which paths and URLs read as a step (rename it)"
    return ""


def check_text(value: str, what: str) -> str:
    r"""Refuse text that cannot be encoded as UTF-8, as a client's bad input.

    Args:
        value: A query, a doc id or a prefix as received.
        what: Its name in the message (``"query"``, ``"doc_ids"``).

    Returns:
        ``value`` unchanged.

    Raises:
        ConfigError: If ``value`` holds a lone surrogate (``"pu\ud800mp"``: JSON's ``\ud800``
            escape or a Python string; no UTF-8 text has one).
    """
    if not is_utf8(value):
        shown = escaped(value)[:80]
        # escaped() already made it printable: quoted as it is, not repr()'d (a second escaping)
        raise ConfigError(f"{what}: '{shown}' holds a lone surrogate, which is not text; send valid UTF-8")
    return value
