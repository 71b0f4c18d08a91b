"""`import proxypointer` stays light: heavy libraries load on first use (STYLE.md §5)."""

import subprocess
import sys
from pathlib import Path

HEAVY = ("torch", "sentence_transformers", "chromadb", "transformers", "langchain_text_splitters", "ray", "pyarrow")


def test_import_does_not_load_heavy_dependencies():
    code = (
        "import sys, proxypointer, proxypointer.cli, proxypointer.index, proxypointer.retrieve.retriever,"
        " proxypointer.ingest.ray, proxypointer.ingest.ray.stages;"
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_public_names():
    import proxypointer

    assert proxypointer.__all__ == sorted(proxypointer.__all__)
    for name in proxypointer.__all__:
        assert getattr(proxypointer, name) is not None


def test_local_ingest_never_imports_ray(tmp_path):
    """The single-process runner (`Index.ingest`, what `ingest` without `--engine ray` calls)
    ingests data/ and syncs again without loading Ray or pyarrow (issue 17)."""
    root = Path(__file__).resolve().parents[2]
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(root / 'tests')!r})\n"
        "from fakes import HashingEmbedder\n"
        "from proxypointer import Index, ProxyPointerConfig\n"
        f"index = Index({str(tmp_path / 's')!r}, ProxyPointerConfig(), HashingEmbedder())\n"
        f"first = index.ingest([{str(root / 'data')!r}], show_progress=False)\n"
        f"again = index.ingest([{str(root / 'data')!r}], prune=True, show_progress=False)\n"
        "index.close()\n"
        "print(first.indexed, again.unchanged, [m for m in ('ray', 'pyarrow') if m in sys.modules])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "3 3 []"


def test_cli_loads_ray_only_for_engine_ray(tmp_path):
    """`ingest --help` never imports Ray; `--engine ray` is refused before it loads anything
    when the store is the embedded one (issue 17)."""
    code = (
        "import sys\n"
        "from proxypointer.cli import main\n"
        "try:\n"
        "    main(['ingest', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"code = main(['ingest', {str(tmp_path / 'none')!r}, '--engine', 'ray', '-q',"
        f" '--store', {str(tmp_path / 's')!r}])\n"
        "print(code, [m for m in ('ray', 'pyarrow') if m in sys.modules])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip().splitlines()[-1] == "1 []"
    assert "--engine" in proc.stdout and "--ray-address" in proc.stdout
    assert "store.mode: http" in proc.stderr and "not safe across processes" in proc.stderr
    assert not (tmp_path / "s").exists()  # refused before the store was created
