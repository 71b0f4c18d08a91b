"""Test doubles: a deterministic hashing embedder with the real MiniLM tokenizer.

Never a product default: unit tests use it so that they run in milliseconds without torch.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from proxypointer.embed.tokenizer import load_tokenizer

_WORD = re.compile(r"[a-z0-9]+")
_STOP = {"the", "a", "an", "of", "to", "is", "in", "and", "or", "for", "on", "it", "be", "are", "do", "i",
         "what", "how", "does", "with", "if", "by", "at", "can", "my", "when", "where", "which", "this", "that"}
_TOKENIZER = []


class HashingEmbedder:
    """Bag of words hashed into ``dim`` buckets, L2-normalised: similar words, similar vectors."""

    name = "test-hashing-embedder"

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.calls: list[list[str]] = []

    @property
    def tokenizer(self):
        if not _TOKENIZER:
            _TOKENIZER.append(load_tokenizer())
        return _TOKENIZER[0]

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in _WORD.findall(text.lower()):
            if w in _STOP:
                continue
            stem = w[:5]
            h = int(hashlib.md5(stem.encode()).hexdigest()[:8], 16)
            v[h % self.dim] += 1.0
        n = np.linalg.norm(v)
        if n == 0:
            v[0] = 1.0
            n = 1.0
        return v / n

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def encode_query(self, query: str) -> np.ndarray:
        return self._vec(query)

    @property
    def embedded_texts(self) -> list[str]:
        return [t for call in self.calls for t in call]


class FakePDFConverter:
    """A PDF converter without Java: returns the markdown a test gave for each file name.

    Subclasses ``proxypointer.read.pdf.PDFConverter`` (built on first use, so that importing this
    module stays light); the PDFs themselves must be real (pypdf counts their pages first).
    ``calls`` lists the file names of each ``convert_group`` call: a spy on conversions.
    """

    def __new__(cls, outputs: dict[str, str], version: str = "1.0"):
        from proxypointer.read.pdf import PDFConverter
        from proxypointer.tree.pages import BUILTIN_STYLES

        class _Fake(PDFConverter):
            name = "fake-converter"
            marker_style = BUILTIN_STYLES["opendataloader"]

            def __init__(self) -> None:
                self.outputs = dict(outputs)
                self._version = version
                self.calls: list[list[str]] = []

            @property
            def version(self) -> str:
                return self._version

            @property
            def options(self) -> tuple[tuple[str, str], ...]:
                return (("format", "markdown"),)

            def check_available(self) -> None:
                return None

            def convert_group(self, paths, done):
                self.calls.append([p.name for p in paths])
                out = []
                for i, p in enumerate(paths):
                    out.append(self.outputs[p.name])
                    done(i)
                return out

        return _Fake()
