"""A local fake of an OpenAI-compatible ``/v1/embeddings`` endpoint (stdlib ``http.server``, one thread).

It answers with the vectors of :class:`fakes.HashingEmbedder`, scaled by 3 (servers need not
normalise) and listed in reverse order with their ``index`` (servers need not keep the order),
so that a store embedded through it must hold the same vectors as one embedded in-process by
the hashing embedder. Requests are recorded; ``script`` queues answers to give first (an HTTP
status, a body, a delay).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fakes import HashingEmbedder


@dataclass
class Scripted:
    """One answer to give instead of vectors: ``status`` with ``body``, after ``delay_s``."""

    status: int = 200
    body: Any = None
    delay_s: float = 0.0


class FakeEmbeddingServer:
    """Serves ``POST /v1/embeddings`` on 127.0.0.1 (a free port) until :meth:`close`.

    Attributes:
        base_url: ``http://127.0.0.1:<port>/v1``.
        requests: Each request's ``{"path", "headers", "json"}``, in order.
        script: Answers given before vectors, first first.
        dim: Dimension of the vectors.
    """

    def __init__(self, dim: int = 384) -> None:
        self.requests: list[dict[str, Any]] = []
        self.script: list[Scripted] = []
        self.dim = dim
        self.embedder = HashingEmbedder(dim)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_POST(self):  # noqa: N802 - http.server naming
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                fake.requests.append(
                    {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "json": body}
                )
                step = fake.script.pop(0) if fake.script else None
                if step is not None and step.delay_s:
                    time.sleep(step.delay_s)
                if step is not None and step.body is not None:
                    return self._send(step.status, step.body)
                if self.path != "/v1/embeddings":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                vectors = [(fake.embedder._vec(t) * 3.0).tolist() for t in texts]
                data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)][::-1]
                return self._send(200, {"object": "list", "model": body.get("model"), "data": data,
                                        "usage": {"prompt_tokens": 0, "total_tokens": 0}})

            def _send(self, status, payload):
                # a str is sent as it is, as an HTML page (a proxy's or a web server's error page)
                raw = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html" if isinstance(payload, str) else "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.send_header("retry-after-ms", "1")  # the client's retries wait 1 ms, not seconds
                self.end_headers()
                try:
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def inputs(self) -> list[str]:
        """Every text sent for embedding, in order."""
        out: list[str] = []
        for r in self.requests:
            texts = r["json"]["input"]
            out.extend(texts if isinstance(texts, list) else [texts])
        return out

    def close(self) -> None:
        """Stop serving and free the port."""
        self.server.shutdown()
        self.server.server_close()
