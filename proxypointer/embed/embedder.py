"""Embedding: texts -> L2-normalised float32 vectors, with sentence-transformers.

``import proxypointer`` never imports torch or sentence-transformers (about 7 s here,
docs/stack.md); the model loads on the first ``encode`` call, offline, from a local folder.
Loading changes no process-wide state: no environment variable, no other library's logger
level or progress-bar setting (options are passed per call instead).
"""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .._lru import LRU
from ..config import EmbeddingConfig
from ..errors import ConfigError, MissingDependencyError
from .names import embedder_name, model_name
from .onnxencoder import (
    OnnxEncoder,
    copy_encoder,
    encoder_path,
    export_encoder,
    refusal,
    shared_encoder_dir,
    transformer_body,
    writable,
)
from .tokenizer import HFTokenizer, less_prefix, load_tokenizer, resolve_model_path

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["Embedder", "SentenceTransformerEmbedder"]

logger = logging.getLogger(__name__)


class Embedder(Protocol):
    """What the pipeline needs from an embedding model.

    Attributes:
        name: What the store records and the embedding cache keys vectors by: everything
            that shapes the stored vectors (:func:`~proxypointer.embed.names.embedder_name`).
        tokenizer: Counts word pieces and knows ``max_seq_length`` (chunk sizing).
    """

    name: str
    tokenizer: Any

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed chunk texts (with the embedder's document prefix, if it has one).

        Returns:
            float32 array of shape ``(len(texts), dim)``, rows L2-normalised, so that the
            dot product is the cosine similarity.
        """
        ...


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded lazily from a local folder.

    Args:
        config: Model name or path, batch size, device, prefixes (``backend`` must be
            ``sentence-transformers``).
        quantize_int8: Quantise the model's linear layers to int8 after loading (torch
            dynamic quantisation, CPU only); also on when ``config.quantize_int8`` is set.
            Vectors change slightly, so the name, and with it the embedding-cache key, gets a
            ``+int8`` suffix; speed and retrieval quality on qasper-dev are in
            docs/benchmarks.md.
        query_cache_size: Query vectors kept by :meth:`encode_query` (least recently used
            evicted; 0 disables the cache).
        trace_query: Embed queries through a frozen TorchScript trace of the transformer
            (built once, ~1 s, at the first query; checked against the eager model on probe
            texts, which must agree within :data:`TRACE_TOLERANCE`, else the eager model is
            kept). Same vectors, one MiniLM query forward ~13 instead of ~17-21 ms here
            (docs/benchmarks.md). False for one-shot processes, which pay the build and gain
            nothing.
        query_threads: torch intra-op threads for :meth:`encode_query` only (restored after
            each call; batch ``encode`` keeps torch's setting); None keeps torch's setting.
            Default 1: on this 2-core machine with any other process running, a one-query
            forward pass took ~20-50 ms with one thread and ~400-700 ms with torch's two
            (each op waits for the descheduled thread; docs/benchmarks.md). The setting is
            process-wide while a query runs: do not encode in another thread of the same
            process at the same time.
        query_encoder_dir: The store's folder of exported encoders (``<store>/encoders``),
            searched before the folder shared by the user's stores (``embedding.encoder_cache``,
            :func:`~proxypointer.embed.onnxencoder.shared_encoder_dir`). With
            ``embedding.query_encoder: onnx`` queries, and with ``embedding.document_encoder:
            onnx`` batches, are embedded by the encoder exported for this model
            (:class:`~proxypointer.embed.onnxencoder.OnnxEncoder`, no torch). When there is
            none, the first query embeds with torch and then exports it; the first batch
            loads the model and exports it before embedding. With neither folder: always torch.

    Attributes:
        name: What the store records: the model, ``+int8``, the document prefix
            (:func:`~proxypointer.embed.names.embedder_name`). Exported encoders are named by
            the model alone (:attr:`model_name`): the prefix does not change the network.

    Raises:
        MissingDependencyError: On first use, if sentence-transformers is not installed.
        ConfigError: If the model is neither packaged, a folder, nor in the local cache, or
            ``config.backend`` is not ``sentence-transformers``.
    """

    def __init__(
        self,
        config: EmbeddingConfig | None = None,
        *,
        quantize_int8: bool = False,
        query_cache_size: int = 1024,
        trace_query: bool = True,
        query_threads: int | None = 1,
        query_encoder_dir: Path | None = None,
    ) -> None:
        self.config = config or EmbeddingConfig()
        if self.config.backend != "sentence-transformers":
            raise ConfigError(f"embedding.backend: SentenceTransformerEmbedder runs backend sentence-transformers, "
                              f"got {self.config.backend!r} (embed.make.make_embedder picks the class)")
        self.quantize_int8 = quantize_int8 or self.config.quantize_int8
        self.name = embedder_name(self.config, self.quantize_int8)
        self.model_name = model_name(self.config, self.quantize_int8)
        self.query_cache_size = max(0, int(query_cache_size))
        self.query_threads = query_threads
        self.trace_query = trace_query
        self._query_encoder: Callable[[str], np.ndarray] | None = None
        self._queries: LRU[str, np.ndarray] = LRU(self.query_cache_size)
        self._tokenizer: HFTokenizer | None = None
        self._model: SentenceTransformer | None = None
        uses_onnx = "onnx" in (self.config.query_encoder, self.config.document_encoder) and not self.quantize_int8
        shared = shared_encoder_dir(self.config.encoder_cache)
        #: Folders searched for an exported encoder, the store's first; exports go to each.
        self.encoder_dirs: tuple[Path, ...] = (
            tuple(dict.fromkeys(d for d in (query_encoder_dir, shared) if d is not None)) if uses_onnx else ()
        )
        self._onnx: OnnxEncoder | None = None
        self._onnx_checked = False
        self._export_tried = False
        self._damaged: set[Path] = set()  # copies that could not be read: replaced when one is found or made

    @property
    def tokenizer(self) -> HFTokenizer:
        """The model's tokenizer (loaded without torch).

        Its ``max_seq_length`` is lowered by the word pieces of ``document_prefix``, so that
        prefix + breadcrumb + chunk text fit the model's input.
        """
        if self._tokenizer is None:
            self._tokenizer = less_prefix(load_tokenizer(self.config.model), self.config.document_prefix)
        return self._tokenizer

    @property
    def model(self) -> SentenceTransformer:
        """The loaded ``SentenceTransformer`` (first access loads it, ~1 s plus imports)."""
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as err:
                raise MissingDependencyError(
                    "embedding needs sentence-transformers; pip install sentence-transformers"
                ) from err
            path = resolve_model_path(self.config.model)
            logger.info("loading embedding model %s from %s", self.model_name, path)
            # Models are never downloaded at run time: the path is a local folder and the
            # libraries are told so per call; no environment variable or global setting of
            # another library is changed (hidden global state, STYLE.md).
            with _no_loading_bar():
                model = SentenceTransformer(str(path), device=self.config.device, local_files_only=True)
            if self.quantize_int8:
                model = _quantize_int8(model)
            self._model = model
        return self._model

    @property
    def dim(self) -> int:
        """Embedding dimension (384 for all-MiniLM-L6-v2)."""
        get = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get())

    def encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        """Embed chunk texts, each with ``document_prefix`` put before it (see :meth:`encode_texts`).

        Args:
            texts: Texts, each within the model's ``max_seq_length`` with the prefix
                (chunking ensures it: :attr:`tokenizer`).
            batch_size: Texts per forward pass; defaults to the config's.

        Returns:
            float32 array ``(len(texts), dim)``, rows L2-normalised, in the order of ``texts``.
        """
        prefix = self.config.document_prefix
        return self.encode_texts([prefix + t for t in texts] if prefix else texts, batch_size)

    def encode_queries(self, queries: list[str]) -> np.ndarray:
        """Embed many queries in batches (each with ``query_prefix``); float32 ``(n, dim)``, rows L2-normalised."""
        return self.encode_texts([self.config.query_prefix + q for q in queries])

    def encode_texts(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        """Embed texts as they are (no prefix), in batches of about the same number of word pieces.

        Each forward pass pads its texts to the longest one. sentence-transformers orders a
        call's texts by characters, which match word pieces poorly (numbers, formulas and
        names split into many pieces): on 3,613 chunk texts of 60 qasper-dev papers, batches
        of 16 in character order ran 488k padded word pieces for 385k real ones, in word-piece
        order 386k (docs/benchmarks.md). So the texts are ordered here by word pieces (the
        model's tokenizer, longest first) and each batch is one ``model.encode`` call.

        Args:
            texts: Texts, each within the model's ``max_seq_length`` (chunking ensures it).
            batch_size: Texts per forward pass; defaults to the config's.

        Returns:
            float32 array ``(len(texts), dim)``, rows L2-normalised, in the order of ``texts``.
        """
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        size = max(1, batch_size or self.config.batch_size)
        onnx = self._document_encoder()
        if onnx is not None:
            return onnx.encode_batch(list(texts), batch_size=size)  # ordered by word pieces there too
        order = np.argsort([-n for n in self.tokenizer.count_batch(list(texts))], kind="stable")
        batches = [order[i : i + size] for i in range(0, len(texts), size)]
        parts = [
            self.model.encode(
                [texts[j] for j in rows],
                batch_size=size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            for rows in batches
        ]
        out = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
        for rows, vectors in zip(batches, parts, strict=True):
            out[rows] = vectors
        return out

    def _document_encoder(self) -> OnnxEncoder | None:
        """Return the exported encoder for batches, exporting it first when there is none; None: torch.

        Raises:
            ConfigError: If the file found was exported for another model.
        """
        if self.config.document_encoder != "onnx" or not self.encoder_dirs or self.config.device != "cpu":
            return None  # on an accelerator, batches are the model's (onnxruntime runs on the CPU here)
        if self._exported_encoder() is None and not self._export_tried:
            self.export_encoder()  # the model loads for it, as it would for the batch
        return self._onnx

    def encode_query(self, query: str) -> np.ndarray:
        """Embed one query (with the configured ``query_prefix``); float32 ``(dim,)``.

        Repeated queries come from an in-process LRU cache of ``query_cache_size`` vectors
        (a MiniLM forward pass costs ~13 ms traced, ~20 eager, on one of these CPU cores; a
        cache hit microseconds). The returned array is read-only: it is shared with the cache.

        With an exported encoder (``embedding.query_encoder: onnx``, see the class docstring)
        the query is embedded by it, without torch (:mod:`proxypointer.embed.onnxencoder`,
        ~6.5 ms). Otherwise the first
        uncached query builds the traced encoder when ``trace_query`` is set (~0.6-0.9 s once,
        see the class docstring), and then exports the ONNX encoder for the next process.

        Raises:
            ConfigError: If the encoder found was exported for another model.
        """
        text = self.config.query_prefix + query
        vector = self._queries.get(text)
        if vector is not None:
            return vector
        onnx = self._exported_encoder() if self.config.query_encoder == "onnx" else None
        if onnx is not None:
            vector = onnx.encode(text)
        elif self.query_threads:
            import torch

            before = torch.get_num_threads()
            torch.set_num_threads(self.query_threads)
            try:
                vector = self._encode_one(text)
            finally:
                torch.set_num_threads(before)
        else:
            vector = self._encode_one(text)
        if onnx is None and self.config.query_encoder == "onnx" and not self._export_tried:
            self.export_encoder()  # once: the next process embeds its queries without torch
        if self.query_cache_size:
            vector.setflags(write=False)
            self._queries.put(text, vector)
        return vector

    def _exported_encoder(self) -> OnnxEncoder | None:
        """Return the encoder exported for this model in :attr:`encoder_dirs`, if there is one.

        A copy that cannot be read (damaged, half written by hand) is replaced by a good copy
        found in another folder; with none, by the next export.

        Raises:
            ConfigError: If the file found was exported for another model.
        """
        if not self._onnx_checked:
            self._onnx_checked = True
            model_path = Path(resolve_model_path(self.config.model)) if self.encoder_dirs else None
            for folder in self.encoder_dirs:
                path = encoder_path(folder, self.model_name, model_path)
                if not path.is_file():
                    continue
                try:
                    self._onnx = OnnxEncoder(path, self.model_name, model_path)
                except ConfigError:
                    raise  # another model's encoder: refused, never used
                except Exception as err:  # noqa: BLE001 - a damaged file: another copy or an export replaces it
                    logger.warning("%s (or its .json): cannot read this encoder (%s); it is replaced", path, err)
                    self._damaged.add(path)
                else:
                    logger.debug("texts embedded by %s", path)
                    break
            if self._onnx is not None:
                self._replace_damaged(self._onnx.path)
        return self._onnx

    def _replace_damaged(self, good: Path) -> None:
        """Copy a readable encoder over each copy found damaged in :attr:`encoder_dirs`."""
        for path in sorted(self._damaged):
            if copy_encoder(good, path.parent) is not None:
                logger.info("%s: replaced by a copy of %s", path, good)
                self._damaged.discard(path)

    def has_query_encoder(self) -> bool:
        """Tell whether queries are embedded by an exported encoder (without torch).

        Raises:
            ConfigError: If the file found was exported for another model.
        """
        return self.config.query_encoder == "onnx" and self._exported_encoder() is not None

    def export_encoder(self) -> Path | None:
        """Export this model's encoder into :attr:`encoder_dirs` unless it is there.

        Loads the model if it is not loaded (torch). Called at the end of an ingest, before the
        first batch and after the first query embedded with torch. Tried once per process; a
        model whose export was refused (it cannot be exported, or its vectors did not match)
        is not tried again by any process (:func:`~proxypointer.embed.onnxencoder.refusal`).
        The store's folder gets its own copy of an encoder found only in the shared folder.

        Returns:
            The exported file; None when there is no folder, the model is quantised, or the
            export failed or did not match the model (logged).
        """
        if not self.encoder_dirs:
            return None
        model_path = Path(resolve_model_path(self.config.model))
        found = self._exported_encoder()
        if found is None and not self._export_tried:
            self._export_tried = True
            reasons = [r for r in (refusal(d, self.model_name, model_path) for d in self.encoder_dirs) if r]
            if reasons:
                logger.debug("no ONNX encoder for %s (refused before: %s)", self.model_name, reasons[0])
                return None
            folder = next((d for d in self.encoder_dirs if writable(d)), None)
            if folder is None:
                logger.warning("no ONNX encoder for %s: cannot write to %s; texts are embedded by torch "
                               "(several seconds of loading per process)", self.model_name,
                               " or ".join(map(str, self.encoder_dirs)))
                return None
            path = export_encoder(self.model, self.model_name, model_path, folder)
            if path is not None:
                self._onnx = OnnxEncoder(path, self.model_name, model_path)  # the next texts use it
            found = self._onnx
        if found is None:
            return None
        self._replace_damaged(found.path)
        for folder in self.encoder_dirs:  # each folder gets its copy: the store's, the shared one
            if not encoder_path(folder, self.model_name, model_path).is_file():
                copy_encoder(found.path, folder)
        return found.path

    def _encode_one(self, text: str) -> np.ndarray:
        """One text -> float32 ``(dim,)``, through the traced encoder when there is one."""
        if self._query_encoder is None:
            traced = _traced_encoder(self.model) if self.trace_query else None
            self._query_encoder = traced or (lambda t: self.encode_texts([t])[0])
        return self._query_encoder(text)


#: Largest absolute difference per vector component allowed between the traced and the
#: eager model on the probe texts (float32 vectors of norm 1; the same kernels run, so the
#: difference measured for MiniLM is 0).
TRACE_TOLERANCE = 1e-5

_PROBES = (
    "a",
    "What is the effect of the proposed method on the baseline?",
    "Section 4.2 reports results on the held-out set " * 30,  # truncated at max_seq_length
)


@contextmanager
def _no_loading_bar() -> Iterator[None]:
    """Hide transformers' "Loading weights" bar while a model loads (issue 32), then restore it.

    transformers 5 draws the bar on stderr whenever a model loads, into the output of the
    CLI and of a user's program; its switch is global, so it is put back as it was.
    """
    hf_logging = sys.modules.get("transformers.utils.logging")  # sentence-transformers imported it
    if hf_logging is None:  # importing it here would set transformers' own loggers up
        yield
        return
    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()


def _traced_encoder(model: SentenceTransformer) -> Callable[[str], np.ndarray] | None:
    """Build a one-text encoder that runs the model's transformer as a frozen TorchScript trace.

    For one unpadded text the eager Hugging Face forward spends ~4-5 ms of ~17-21 in Python
    (mask preparation, module calls); a trace frozen with its weights runs the same tensor
    operations without it. The trace records the control flow of its example, which holds
    for any single text: no padding, the attention mask all ones, any length up to
    ``max_seq_length`` (tokenization truncates). Pooling and normalisation stay the model's
    own modules.

    Returns:
        The encoder, or None (logged) when the model is not a text transformer followed by
        pooling modules, tracing fails, or the traced vectors differ from the eager model's
        on :data:`_PROBES` by more than :data:`TRACE_TOLERANCE`.
    """
    import torch

    modules = list(model.children())
    auto_model = getattr(modules[0], "auto_model", None) if modules else None
    if auto_model is None or getattr(modules[0], "module_output_name", None) != "token_embeddings":
        logger.info("query tracing skipped: the model's first module is not a text transformer")
        return None
    try:
        device = model.device

        def prepare(text: str) -> dict[str, Any]:
            features = model.preprocess([text])
            return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}

        features = prepare(_PROBES[1])
        keys = tuple(k for k in ("input_ids", "attention_mask", "token_type_ids") if k in features)

        # Tracing reads every attribute of the module; transformers' ``loss_function``
        # property logs a warning when read on a model without a loss type. Encoding never
        # uses a loss, so this inference-only model gets none and the read is silent (no
        # logger of transformers is touched).
        if isinstance(getattr(type(auto_model), "loss_function", None), property):
            auto_model.loss_function = None
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TracerWarnings and deprecations of the trace
            traced = torch.jit.freeze(
                torch.jit.trace(transformer_body(auto_model, keys), tuple(features[k] for k in keys), check_trace=False)
            )

        def encode_one(text: str) -> np.ndarray:
            features = prepare(text)
            with torch.no_grad():
                features["token_embeddings"] = traced(*(features[k] for k in keys))
                for module in modules[1:]:
                    features = module(features)
                vector = torch.nn.functional.normalize(features["sentence_embedding"], p=2, dim=1)
            return vector[0].cpu().numpy().astype(np.float32, copy=False)

        for probe in _PROBES:
            expected = model.encode(
                [probe], normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )[0]
            difference = float(np.abs(encode_one(probe) - expected).max())
            if difference > TRACE_TOLERANCE:
                logger.info("query tracing skipped: traced vector differs by %.2g on a probe", difference)
                return None
    except Exception as err:  # noqa: BLE001 - any failure keeps the eager model, which works
        logger.info("query tracing skipped: %s", err)
        return None
    logger.debug("query encoder traced")
    return encode_one


def _quantize_int8(model: SentenceTransformer) -> SentenceTransformer:
    """Quantise every ``torch.nn.Linear`` to int8, dynamically (CPU only).

    Weights are stored as int8; activations are quantised per batch at run time.
    """
    import torch

    with warnings.catch_warnings():  # torch.ao.quantization is deprecated in favour of torchao
        warnings.simplefilter("ignore")
        from torch.ao.quantization import quantize_dynamic

        return quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
