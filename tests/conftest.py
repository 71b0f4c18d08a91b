"""Shared fixtures: where shared data lives, a fake embedder, a fresh index."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

#: ``../shared`` beside the project root; override with PROXYPOINTER_SHARED.
SHARED = Path(os.environ.get("PROXYPOINTER_SHARED", ROOT.parent / "shared"))


@pytest.fixture(scope="session", autouse=True)
def _own_encoder_cache(tmp_path_factory):
    """Exported ONNX encoders shared by stores go to this session's folder, never the user's cache."""
    before = os.environ.get("PROXYPOINTER_CACHE")
    os.environ["PROXYPOINTER_CACHE"] = str(tmp_path_factory.mktemp("proxypointer-cache"))
    yield
    if before is None:
        os.environ.pop("PROXYPOINTER_CACHE", None)
    else:
        os.environ["PROXYPOINTER_CACHE"] = before


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The shared folder (bench data and bug cases); skips the test when absent."""
    if not SHARED.is_dir():
        pytest.skip(f"shared data not found at {SHARED} (set PROXYPOINTER_SHARED)")
    return SHARED


#: Bug cases kept in the repository (copied from ``../shared/cases``; see its README): a clone
#: tests itself, only the large benchmarks are read from ``../shared``.
CASES = Path(__file__).resolve().parent / "cases"


@pytest.fixture(scope="session")
def cases_dir() -> Path:
    """``tests/cases``: one folder per bug case with its input and ``expected.md``."""
    return CASES


@pytest.fixture
def fake_embedder():
    """A deterministic hashing embedder (real MiniLM tokenizer, no torch)."""
    from fakes import HashingEmbedder

    return HashingEmbedder()


@pytest.fixture(scope="module")
def data_store(tmp_path_factory) -> Path:
    """A store folder holding the repository's data/ indexed with the hashing embedder, per module.

    For tests that only read it (retrievers, rerankers, answers); a test that writes makes its own.
    """
    from fakes import HashingEmbedder

    from proxypointer.config import ProxyPointerConfig
    from proxypointer.index import Index

    root = tmp_path_factory.mktemp("store")
    index = Index(root, ProxyPointerConfig(), HashingEmbedder())
    assert not index.ingest([ROOT / "data"], show_progress=False).failed
    index.close()
    return root


@pytest.fixture
def make_index(tmp_path, fake_embedder):
    """Factory: ``make_index(config=None, store=None)`` -> an Index on a temp store."""
    from proxypointer.config import ProxyPointerConfig
    from proxypointer.index import Index

    made = []

    def _make(config: ProxyPointerConfig | None = None, store: Path | None = None, embedder=None):
        idx = Index(store or tmp_path / "store", config or ProxyPointerConfig(), embedder or fake_embedder)
        made.append(idx)
        return idx

    yield _make
    for idx in made:
        idx.close()
