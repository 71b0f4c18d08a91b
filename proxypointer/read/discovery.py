"""Discovery: the files and folders given to ``ingest`` -> source files with unique doc ids.

Rules (shared cases 34 and 37, docs/lifecycle.md):

- A folder is searched recursively for the suffixes of the reader table (``*.md``,
  ``*.markdown``, ``*.pdf``, ``*.docx``, ``*.html``, ``*.htm``, ``*.pptx``); a file given
  directly is taken whatever its suffix.
- ``doc_id`` is the path relative to the folder given, ``/``-separated, without the suffix
  (``policies/leave``); for a file given directly, its stem.
- Never a source: a proxypointer store (the configured one, wherever it lies, and any folder
  holding a ``registry.sqlite3``). Skipped unless ``include_hidden``: hidden folders and files
  below a folder given (``.git``, ``.obsidian``, any ``.name``) and tool folders
  (:data:`TOOL_FOLDERS`, any virtualenv).
- Symlinks are followed; a folder reached again (a loop such as ``loop -> .``) is not entered
  twice, and a file reached by several paths is indexed once, under the path without a
  symlink when there is one.
- Two different files with one doc_id (``faq.md`` + ``faq.markdown``, ``README.md`` in two
  folders given together): the file that already owns the id in the registry, else the first
  in the order given, keeps it; each other one fails with both paths named.
- Ids are Unicode NFC (:mod:`proxypointer.docids`): ``Cafe`` + U+0301 + ``-menu.md`` (NFD)
  is ``Café-menu``. A file whose name is not valid UTF-8 or holds a control character (a
  newline) gets no id: it fails with its name escaped, and the other files are indexed.
- A file given directly that the registry already holds under another id (ingested earlier
  from its folder, as ``policies/leave``) keeps that id.
"""

from __future__ import annotations

import logging
import os
import unicodedata
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..docids import escaped, is_utf8, name_problem, normalize_doc_id
from ..storefiles import is_store

__all__ = ["TOOL_FOLDERS", "Discovery", "SourceFile", "discover", "is_store_folder"]

logger = logging.getLogger(__name__)

#: Folder names skipped like hidden folders: dependencies and caches of other tools, whose
#: READMEs and templates are nobody's documents (case 34).
TOOL_FOLDERS = frozenset({"node_modules", "__pycache__", "site-packages", "bower_components", "__pypackages__"})


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One file to ingest, as discovery found it. Picklable.

    Attributes:
        doc_id: Document id (see the module docstring).
        path: Absolute path as reached (it may run through a symlink).
        real_path: Absolute path with every symlink resolved: the file's identity; the
            registry records it as the document's ``source_path``.
        root: Absolute path of the folder given that contains it, or None for a file given
            directly.
        suffix: Key into the reader table (lower-case suffix with the dot); a file given
            directly with a suffix the table lacks is read as markdown (``.md``).
    """

    doc_id: str
    path: str
    real_path: str
    root: str | None
    suffix: str


@dataclass(slots=True)
class Discovery:
    """What :func:`discover` found.

    Attributes:
        files: One entry per document, ids unique, in the order found.
        failed: ``(path, message)`` for paths that do not exist, lie inside a store, or lost a
            doc_id collision.
        roots: Absolute paths of the folders given (``--prune`` looks only inside them).
    """

    files: list[SourceFile] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    roots: list[str] = field(default_factory=list)


def is_store_folder(path: str | Path) -> bool:
    """Tell whether ``path`` holds a proxypointer store (its ``registry.sqlite3``)."""
    return is_store(path)


def _skipped_name(name: str, include_hidden: bool) -> bool:
    return not include_hidden and (name.startswith(".") or name in TOOL_FOLDERS)


def _inside(path: str, folders: Collection[str]) -> str | None:
    for f in folders:
        if path == f or path.startswith(f.rstrip(os.sep) + os.sep):
            return f
    return None


def _walk(
    root: str, suffixes: Collection[str], stores: Collection[str], include_hidden: bool
) -> list[tuple[str, str]]:
    """``(path, real path)`` of files under ``root`` with a known suffix, sorted per folder.

    Symlinks are followed and loops cut. The real path is resolved once per folder (and per
    symlinked file), not per file: ``os.path.realpath`` costs a system call per component.
    """
    out: list[tuple[str, str]] = []
    seen: set[tuple[int, int]] = set()
    for folder, dirs, files in os.walk(root, followlinks=True):
        try:
            st = os.stat(folder)
        except OSError:
            dirs[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen:  # reached again through a symlink: a loop or an alias
            dirs[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        real_folder = os.path.realpath(folder)
        keep = []
        for d in sorted(dirs):
            full = os.path.join(folder, d)
            venv = not include_hidden and os.path.isfile(os.path.join(full, "pyvenv.cfg"))
            if _skipped_name(d, include_hidden) or venv:
                logger.debug("skipping %s (hidden or tool folder; include_hidden opts in)", full)
                continue
            if _inside(os.path.realpath(full), stores) or is_store_folder(full):
                logger.debug("skipping %s (a proxypointer store is never a source)", full)
                continue
            keep.append(d)
        dirs[:] = keep
        for name in sorted(files):
            if _skipped_name(name, include_hidden) or os.path.splitext(name)[1].lower() not in suffixes:
                continue
            full = os.path.join(folder, name)
            if os.path.islink(full):
                if os.path.isfile(full):
                    out.append((full, os.path.realpath(full)))
                else:
                    logger.warning("%s: skipped: a symbolic link to %s, which is not a file", full, os.readlink(full))
            elif os.path.isfile(full):
                out.append((full, os.path.join(real_folder, name)))
            else:  # a named pipe, a socket, a device: reading could block or never end
                logger.warning("%s: skipped: not a regular file", full)
    return out


def discover(
    paths: Iterable[str | Path],
    suffixes: Collection[str],
    *,
    stores: Iterable[str | Path] = (),
    include_hidden: bool = False,
    owner_of: Callable[[str], str | None] | None = None,
    id_of: Callable[[str], str | None] | None = None,
) -> Discovery:
    """Find the source files under the given paths and give each a unique doc id.

    Args:
        paths: Files or folders, in the order given.
        suffixes: Lower-case suffixes (with the dot) searched for in folders.
        stores: Store folders never read as sources (the index's own), wherever they lie.
        include_hidden: Also search hidden folders and files and tool folders below the
            folders given.
        owner_of: ``doc_id -> real path`` of the file that owns the id in the registry (None if
            the id is free); in a collision the owner keeps the id.
        id_of: ``real path -> doc_id`` the registry holds for a file (None if none); a file
            given directly keeps that id, and so does a file in a folder whose stored id is
            its id in another normal form (a store built before ids were NFC) or its id under
            a folder above (``sub/x`` from ``notes/``, found again in ``notes/sub``).

    Returns:
        The files (unique doc ids and files) and the paths that failed, each with a message
        naming the path, the problem and the cure.
    """
    store_paths = [os.path.realpath(s) for s in stores]
    result = Discovery()
    found: list[SourceFile] = []
    for raw in paths:
        given = os.path.abspath(raw)
        real = os.path.realpath(given)
        shown = escaped(str(raw))  # a name that is not UTF-8 or holds a newline, printable
        inside = _inside(real, store_paths) or next(
            (str(p) for p in (Path(real), *Path(real).parents) if is_store_folder(p)), None
        )
        if inside:
            result.failed.append((shown, f"{shown}: lies inside the proxypointer store {inside}, which is never "
                                  "a source; give the folder of your documents instead"))
            continue
        if os.path.isdir(given):
            result.roots.append(given)
            start = len(given.rstrip(os.sep)) + 1
            for f, real_f in _walk(given, suffixes, store_paths, include_hidden):
                stem, suffix = os.path.splitext(f[start:])
                if problem := _problem(stem, real_f):
                    result.failed.append((escaped(f), f"{escaped(f)}: not indexed: {problem}"))
                    continue
                doc_id = normalize_doc_id(stem.replace(os.sep, "/"))
                held = id_of(real_f) if id_of else None
                if held is not None and held != doc_id and (
                    normalize_doc_id(held) == doc_id or normalize_doc_id(held).endswith("/" + doc_id)
                ):
                    # indexed under its decomposed name before ids were NFC, or from a folder above
                    # this one (``notes/`` gave ``sub/x``; ``notes/sub`` would give ``x``): kept
                    doc_id = held
                found.append(SourceFile(doc_id, f, real_f, given, suffix.lower()))
        elif os.path.isfile(given):
            suffix = os.path.splitext(given)[1].lower()
            if problem := _problem(Path(given).stem, real):
                result.failed.append((shown, f"{shown}: not indexed: {problem}"))
                continue
            doc_id = (id_of(real) if id_of else None) or normalize_doc_id(Path(given).stem)
            found.append(SourceFile(doc_id, given, real, None, suffix if suffix in suffixes else ".md"))
        elif os.path.lexists(given) and not os.path.exists(given):
            target = escaped(os.readlink(given))
            result.failed.append((shown, f"{shown}: a symbolic link to {target}, which does not exist"))
        elif os.path.exists(given):  # a named pipe, a socket, a device: reading could block
            result.failed.append((shown, f"{shown}: not a regular file or folder (a pipe, socket or device)"))
        else:
            result.failed.append((shown, f"{shown}: no such file or folder; check the path"))

    # One file, several paths (a symlinked alias, a folder given twice): keep one, preferring
    # a path without a symlink below its folder, then the first found.
    by_file: dict[str, SourceFile] = {}
    for sf in found:
        have = by_file.get(sf.real_path)
        if have is None or (_is_alias(have) and not _is_alias(sf)):
            by_file[sf.real_path] = sf
    unique = [sf for sf in found if by_file[sf.real_path] is sf]

    # One doc_id, several files: the registry's owner, else the first, keeps it.
    by_id: dict[str, list[SourceFile]] = {}
    for sf in unique:
        by_id.setdefault(sf.doc_id, []).append(sf)
    for doc_id, group in by_id.items():
        if len(group) == 1:
            continue
        owner = owner_of(doc_id) if owner_of else None
        winner = next((sf for sf in group if sf.real_path == owner), group[0])
        for sf in group:
            if sf is not winner:
                result.failed.append((sf.path, _collision_message(sf, winner)))
    lost = {sf.path for sf in unique} & {p for p, _ in result.failed}
    result.files = [sf for sf in unique if sf.path not in lost]
    return result


def _problem(id_part: str, real_path: str) -> str:
    """Why a file cannot be indexed by name (:func:`~proxypointer.docids.name_problem`), or ``""``.

    The part that becomes the id may hold no control character; the whole path, which the
    registry stores, must be valid UTF-8.
    """
    problem = name_problem(id_part)
    if not problem and not is_utf8(real_path):
        problem = "its path is not valid UTF-8 (rename the folder, e.g. with `convmv -f latin1 -t utf8`)"
    return problem


def _is_alias(sf: SourceFile) -> bool:
    """Tell whether the path runs through a symlink below its folder (or is one)."""
    if sf.root is None:
        return os.path.islink(sf.path)
    rel = os.path.relpath(sf.path, sf.root)
    return sf.real_path != os.path.join(os.path.realpath(sf.root), rel)


def _collision_message(loser: SourceFile, winner: SourceFile) -> str:
    if loser.root and winner.root and loser.root != winner.root:
        cure = "ingest their common parent folder instead (ids then keep the folder names), or use two stores"
    elif loser.root is None and winner.root is None:
        cure = "ingest their folder instead (ids then keep the folder names), or rename one"
    else:
        cure = "rename one of them"
    lost, won = loser.path, winner.path
    if lost != won and unicodedata.normalize("NFC", lost) == unicodedata.normalize("NFC", won):
        # the same name in two Unicode forms prints the same: show the difference
        lost, won = (p.encode("ascii", "backslashreplace").decode("ascii") for p in (lost, won))
        cure = "the names differ only in Unicode normal form (NFC and NFD); remove or rename one"
    return (
        f"{lost}: doc_id {loser.doc_id!r} is already the id of {won}; not indexed "
        f"(two files cannot share a doc_id); {cure}"
    )
