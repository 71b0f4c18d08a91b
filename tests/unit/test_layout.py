"""The package's layout: stages as subpackages, imports only downward, no cycles, honest ``__all__``.

Every import of the package is read from the source (top-level, function-local and
``TYPE_CHECKING`` ones alike: a cycle hidden behind ``TYPE_CHECKING`` is still a design
cycle). A unit is a top-level module or subpackage; :data:`RANK` orders them in the direction
data flows (files -> tree -> chunks -> vectors -> hits -> sections), and a unit may import only
units of a lower rank (or itself). docs/architecture.md draws the same order.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "proxypointer"

#: Unit -> rank; an import must go to a strictly lower rank, or stay inside its unit.
RANK = {
    "errors": 0,
    "_version": 0,
    "_moved": 0,
    "_lru": 0,
    "storefiles": 0,
    "yamltext": 1,
    "docids": 1,
    "progress": 1,
    "pdflog": 1,
    "lines": 1,
    "config": 2,
    "chat": 3,
    "embed": 3,
    "tree": 4,
    "read": 5,
    "chunk": 6,
    "store": 7,
    "ingest": 8,
    "retrieve": 8,
    "index": 9,
    "answer": 9,
    "serve": 10,
    "eval": 10,
    "integrations": 10,
    "cli": 11,
    "__main__": 12,
    "": 12,  # the package's own __init__: the public names, re-exported lazily
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Modules of the package that ``name`` imports anywhere in its source."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.split(".")[0] == "proxypointer":
                target = node.module
            else:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in MODULES else target)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "proxypointer")
    found.discard(name)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_module_belongs_to_a_ranked_unit():
    assert {_unit(m) for m in MODULES} <= set(RANK), "add a new top-level module or subpackage to RANK"


def test_imports_only_go_down_the_stages():
    upward = sorted(
        f"{a} -> {b}"
        for a, targets in GRAPH.items()
        for b in targets
        if b in MODULES and _unit(a) != _unit(b) and RANK[_unit(b)] >= RANK[_unit(a)]
    )
    assert upward == []


def test_ingest_and_retrieve_never_import_each_other():
    crossing = [
        f"{a} -> {b}" for a, t in GRAPH.items() for b in t if {_unit(a), _unit(b)} == {"ingest", "retrieve"}
    ]
    assert crossing == []


def test_no_import_cycle_counting_type_checking_and_local_imports():
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH.get(v, ()):
            if w not in MODULES:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(MODULES):
        if module not in index:
            visit(module)
    assert cycles == []


def test_the_query_path_types_against_the_store_not_the_index():
    users = sorted(m for m, t in GRAPH.items() if "proxypointer.index" in t and _unit(m) in ("retrieve", "ingest"))
    assert users == []


def test_the_query_path_sees_a_read_only_store_view():
    # retrieve/ takes the store as StoreView (no write lock, no ingest), never the Store class
    names = set()
    for name, path in MODULES.items():
        if _unit(name) != "retrieve":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("store.folder"):
                names.update(f"{name}: {a.name}" for a in node.names)
    assert names and all(n.endswith(": StoreView") for n in names), sorted(names)


@pytest.mark.parametrize("name", sorted(m for m in MODULES if not m.endswith("__main__")))
def test_all_names_exist(name):
    module = importlib.import_module(name)
    assert hasattr(module, "__all__"), f"{name} declares no __all__"
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert missing == [], f"{name}.__all__ names undefined {missing}"


def test_a_broken_layout_is_caught(tmp_path):
    # the checks above read real sources: an upward import written into a module is found
    source = "from ..retrieve.retriever import Retriever\n"
    path = tmp_path / "chunker.py"
    path.write_text(source)
    targets = _imports("proxypointer.chunk.chunker", path)
    assert "proxypointer.retrieve.retriever" in targets
    assert RANK[_unit("proxypointer.retrieve.retriever")] >= RANK[_unit("proxypointer.chunk.chunker")]


@pytest.mark.parametrize("old", sorted(__import__("proxypointer._moved", fromlist=["MOVED"]).MOVED))
def test_old_module_paths_still_import_for_one_release(old):
    from proxypointer._moved import MOVED

    module = importlib.import_module(f"proxypointer.{old}")
    names = dir(module)
    assert names, f"proxypointer.{old} shows no names"
    targets = [importlib.import_module(f"proxypointer.{t}") for t in MOVED[old]]
    public = next(n for t in targets for n in getattr(t, "__all__", ()))
    with pytest.warns(DeprecationWarning, match=r"the old path works for one release"):
        got = getattr(module, public)
    assert any(getattr(t, public, None) is got for t in targets)  # the same object, not a copy


def test_an_old_path_gives_the_new_objects_and_names_the_new_module():
    with pytest.warns(DeprecationWarning, match=r"proxypointer\.retrieval is now proxypointer\.retrieve\.retriever"):
        from proxypointer.retrieval import Retriever as Old
    from proxypointer.retrieve.retriever import Retriever

    assert Old is Retriever
    with pytest.raises(ImportError):
        from proxypointer.retrieval import NoSuchName  # noqa: F401
