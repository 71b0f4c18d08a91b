"""Test doubles: a deterministic hashing embedder with the real MiniLM tokenizer; a chat endpoint.

Never a product default: unit tests use it so that they run in milliseconds without torch.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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


def completion(content, model="test-model"):
    """A chat-completions reply body whose first choice says ``content``."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class FakeLLM:
    """Scripted replies, one per request: ``(status, body, headers, delay_s)``; records requests."""

    def __init__(self):
        self.script: list[tuple[int, object, dict, float]] = []
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_POST(self):  # noqa: N802 - http.server naming
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                fake.requests.append(
                    {
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "json": json.loads(body),
                    }
                )
                status, reply, headers, delay = (
                    fake.script.pop(0) if fake.script else (500, {"error": "no script"}, {}, 0)
                )
                if delay:
                    time.sleep(delay)
                raw = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
                try:
                    self.send_response(status)
                    self.send_header(
                        "Content-Type", headers.pop("Content-Type", "application/json")
                    )
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def reply(self, content, status=200, headers=None, delay=0.0):
        self.script.append(
            (
                status,
                completion(content) if isinstance(content, str) else content,
                dict(headers or {}),
                delay,
            )
        )

    def close(self):
        self.server.shutdown()
        self.server.server_close()
