"""Module paths of the flat layout (before the stage subpackages), kept working for one release.

``import proxypointer.retrieval`` or ``from proxypointer.pdf import convert_pdfs`` still work:
each old path is a small module whose names are looked up, on first use, in the modules that
hold them now (:data:`MOVED`), with a :class:`DeprecationWarning` naming the new path. The
names are the same objects, so ``isinstance`` checks and identity hold across old and new
paths. Patching a name through an old path does not reach the module that uses it: patch the
new path.

Nothing here loads a heavy package: a target module is imported only when a name of the old
path is first read.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["MOVED", "RENAMED", "install", "lazy_dir", "lazy_names"]

#: Old module (under ``proxypointer.``) -> the modules that hold its names now, searched in
#: order. Old modules that became packages (``tree``, ``store``, ``ingest``) are not here:
#: their package re-exports the old names.
MOVED: dict[str, tuple[str, ...]] = {
    "_converter": ("tree.headings",),
    "_markdown": ("tree.markdown",),
    "_tableparse": ("chunk._tableparse",),
    "chunking": ("chunk.chunker", "lines"),
    "contents": ("tree.contents",),
    "contentslines": ("tree.contentslines",),
    "context": ("retrieve.context",),
    "conversation": ("retrieve.conversation",),
    "datauri": ("chunk.datauri",),
    "delivery": ("retrieve.delivery",),
    "discovery": ("read.discovery",),
    "distributed": ("ingest.ray",),
    "distributed.ray_runner": ("ingest.ray.runner",),
    "distributed.ray_stages": ("ingest.ray.stages",),
    "embedcache": ("store.embedcache",),
    "embedding": ("embed.embedder",),
    "embedtext": ("chunk.embedtext",),
    "evalrun": ("eval.harness",),
    "evaluation": ("eval.benchmark",),
    "filters": ("store.filters",),
    "headingstyles": ("tree.headingstyles",),
    "implied": ("retrieve.implied",),
    "labels": ("tree.labels", "retrieve.labels"),
    "lexical": ("store.terms",),
    "lexicalindex": ("store.lexical",),
    "livetrees": ("retrieve.live",),
    "maintenance": ("ingest.maintenance",),
    "outline": ("tree.outline",),
    "outlinetext": ("tree.outlinetext",),
    "pages": ("tree.pages",),
    "pdf": ("read.pdf",),
    "pipeline": ("index", "store.folder"),
    "preload": ("store.preload",),
    "querytext": ("retrieve.query",),
    "ranking": ("retrieve.ranking",),
    "readers": ("read.readers",),
    "records": ("store.records",),
    "references": ("tree.references", "retrieve.references"),
    "registry": ("store.registry",),
    "retrieval": ("retrieve.retriever",),
    "routing": ("retrieve.routing",),
    "runner": ("ingest.local",),
    "serve.common": ("serve.service",),
    "sources": ("store.sources",),
    "tables": ("chunk.tables",),
    "titles": ("tree.titles",),
    "tokenizer": ("embed.tokenizer",),
    "treecheck": ("tree.check",),
    "treescore": ("eval.trees",),
}

#: Names that left their module (old module, old name) -> (module now, attribute path there),
#: each with the same call signature as before.
RENAMED: dict[tuple[str, str], tuple[str, str]] = {
    ("livetrees", "tree_from_json"): ("tree.build", "DocumentTree.from_json"),
    ("records", "tree_to_json"): ("tree.build", "DocumentTree.to_json"),
}

_PACKAGE = __name__.rpartition(".")[0]


def _old_module(old: str) -> types.ModuleType:
    """Make the module standing for ``proxypointer.<old>``: its names resolve in :data:`MOVED`."""
    targets = tuple(f"{_PACKAGE}.{t}" for t in MOVED[old])
    module = types.ModuleType(f"{_PACKAGE}.{old}", f"Moved to {', '.join(targets)}.")
    if any(k.startswith(old + ".") for k in MOVED):
        module.__path__ = []  # a package before: its submodules are found by the finder

    def __getattr__(name: str) -> Any:
        if name == "__all__":  # ``from proxypointer.<old> import *``
            return sorted({n for t in targets for n in getattr(importlib.import_module(t), "__all__", ())})
        if name.startswith("__"):
            raise AttributeError(name)
        if (old, name) in RENAMED:
            where, path = RENAMED[(old, name)]
            got: Any = importlib.import_module(f"{_PACKAGE}.{where}")
            for part in path.split("."):
                got = getattr(got, part)
            warnings.warn(f"{module.__name__}.{name} is now {_PACKAGE}.{where}.{path}; the old name works for one "
                          "release", DeprecationWarning, stacklevel=2)
            return got
        for target in targets:
            mod = importlib.import_module(target)
            if hasattr(mod, name):
                warnings.warn(
                    f"{module.__name__} is now {mod.__name__}; the old path works for one release",
                    DeprecationWarning,
                    stacklevel=2,
                )
                return getattr(mod, name)
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({n for t in targets for n in dir(importlib.import_module(t))})

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__dir__ = __dir__  # type: ignore[method-assign]
    return module


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``proxypointer.<old>`` for each old path in :data:`MOVED`, and nothing else."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        old = fullname.removeprefix(_PACKAGE + ".")
        if fullname == old or old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=any(k.startswith(old + ".") for k in MOVED))

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _old_module(spec.name.removeprefix(_PACKAGE + "."))

    def exec_module(self, module: types.ModuleType) -> None:
        return None


_FINDER = _Finder()


def install() -> None:
    """Put the finder of old module paths on ``sys.meta_path`` (once; idempotent)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)


def lazy_names(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """Return a module ``__getattr__`` that imports each exported name on first use.

    The package re-exports without importing: ``import proxypointer`` (or ``proxypointer.store``)
    loads nothing heavy, and ``from proxypointer.store import ChromaStore`` still works.

    Args:
        package: The package's ``__name__``.
        exports: Name -> module that defines it, relative to ``package`` (``".chroma"``).
    """

    def __getattr__(name: str) -> Any:
        if name in exports:
            return getattr(importlib.import_module(exports[name], package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


def lazy_dir(namespace: dict[str, Any], exports: dict[str, str]) -> Callable[[], list[str]]:
    """Return a module ``__dir__`` that lists the lazily exported names beside the loaded ones.

    Args:
        namespace: The package's ``globals()``.
        exports: The names :func:`lazy_names` resolves.
    """
    return lambda: sorted({*namespace, *exports})
