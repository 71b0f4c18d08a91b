"""`import proxypointer` stays light: heavy libraries load on first use (STYLE.md §5)."""

import subprocess
import sys

HEAVY = ("torch", "sentence_transformers", "chromadb", "transformers", "langchain_text_splitters")


def test_import_does_not_load_heavy_dependencies():
    code = (
        "import sys, proxypointer, proxypointer.cli, proxypointer.pipeline, proxypointer.retrieval;"
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_public_names():
    import proxypointer

    assert proxypointer.__all__ == sorted(proxypointer.__all__)
    for name in proxypointer.__all__:
        assert getattr(proxypointer, name) is not None
