"""The model's transformer exported once to ONNX and run with onnxruntime: texts -> vectors without torch.

A cold ``proxypointer query`` spent almost all of its 6-8 s importing torch and
sentence-transformers (5.7 s here) to embed one short query, and every ingest paid the same
import and model load (6.6 s here) before its first batch (issue 33). This module exports the
transformer of a sentence-transformers model once, while the model is loaded anyway, and later
processes embed queries and documents with onnxruntime and the model's own ``tokenizer.json``
(``tokenizers``). Both import in about 0.2 s.

An export is checked before it is kept. Each text of :data:`PROBES` is embedded by
sentence-transformers and by the exported encoder, and every pair must reach a cosine of
:data:`COSINE_MIN`; else nothing is kept, the reason is logged and written beside it
(``<name>-<key>.refused.json``), and no later process tries again for the same model files.
Measured for all-MiniLM-L6-v2: cosine 1.0000 on every probe (largest difference per component
1.3e-7); about 6.5 ms per query on one core against 13-20 ms for torch; batches of chunk texts
about 9% faster than sentence-transformers on the same two cores (24.4 s against 26.7 s for
1,200 paper paragraphs, one run; docs/benchmarks.md).

The file is named by the model and by a key of its files, beside a JSON description, in a store
folder (``encoders/``) and in a folder shared by the stores of one user
(:func:`shared_encoder_dir`). :class:`OnnxEncoder` refuses a file written for another model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = [
    "COSINE_MIN",
    "FILE_MODE",
    "FORMAT",
    "PROBES",
    "OnnxEncoder",
    "copy_encoder",
    "encoder_path",
    "export_encoder",
    "model_key",
    "refusal",
    "shared_encoder_dir",
    "transformer_body",
    "writable",
]

logger = logging.getLogger(__name__)

#: Version of the exported file and its description; another version is not read.
FORMAT = 1
#: Least cosine between the exported encoder's vector and sentence-transformers' on each probe.
COSINE_MIN = 0.9999
#: Texts both encoders embed before an export is kept: one word, a question, a text past
#: ``max_seq_length`` (truncation), a query of this project's README, and non-ASCII text.
PROBES = (
    "a",
    "What is the effect of the proposed method on the baseline?",
    "Section 4.2 reports results on the held-out set " * 30,
    "How many weeks of full pay do new parents get?",
    "Ünïcödé 東京 résumé: what does note 14 say?",
)
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def model_key(name: str, model_path: Path) -> str:
    """Return 12 hex digits naming a model's files: its name, config, and its weights' sizes and times.

    The weights are named by size and modification time (nanoseconds), not read: reading them
    would cost each query process about 0.2 s. Weights rewritten in place (a model retrained
    into its folder, same size) get a new time, so an encoder exported from the old ones is
    not used for them.

    Args:
        name: The embedder's name (the store records it).
        model_path: The model's local folder.
    """
    h = hashlib.sha1(name.encode())
    for file in ("config.json", "tokenizer.json", "modules.json"):
        path = model_path / file
        h.update(path.read_bytes() if path.is_file() else b"-")
    for weights in sorted(model_path.glob("*.safetensors")) + sorted(model_path.glob("*.bin")):
        stat = weights.stat()
        h.update(f"{weights.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return h.hexdigest()[:12]


def encoder_path(folder: Path, name: str, model_path: Path) -> Path:
    """Return where the exported encoder of a model lives in ``folder`` (``<name>-<key>.onnx``)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name)
    return folder / f"{safe}-{model_key(name, model_path)}.onnx"


def shared_encoder_dir(setting: str) -> Path | None:
    """Return the folder of exported encoders shared by one user's stores, or None.

    Args:
        setting: ``embedding.encoder_cache``: ``auto`` (``$PROXYPOINTER_CACHE/encoders``, else
            ``$XDG_CACHE_HOME/proxypointer/encoders``, else ``~/.cache/proxypointer/encoders``:
            the usual place of a user's caches, like Hugging Face's), ``off`` (none: each store
            exports its own), or a folder.
    """
    if setting == "off":
        return None
    if setting != "auto":
        return Path(setting).expanduser()
    root = os.environ.get("PROXYPOINTER_CACHE")
    if root:
        return Path(root).expanduser() / "encoders"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "proxypointer" / "encoders"


def writable(folder: Path) -> bool:
    """Tell whether ``folder`` exists or can be made, and files can be written in it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


def refusal(folder: Path, name: str, model_path: Path) -> str | None:
    """Return why an earlier export of this model into ``folder`` was refused, or None.

    A refusal is kept for the same model files only (its name carries their key), so another
    version of the model is tried again.
    """
    path = encoder_path(folder, name, model_path).with_suffix(".refused.json")
    try:
        return str(json.loads(path.read_text()).get("reason", "refused"))
    except (OSError, ValueError):
        return None


def _refuse(folder: Path, name: str, model_path: Path, reason: str) -> None:
    """Log why a model's export is refused and write it down, so that no process tries again."""
    logger.info("no ONNX encoder for %s: %s; torch embeds its texts", name, reason)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = encoder_path(folder, name, model_path).with_suffix(".refused.json")
        path.write_text(json.dumps({"format": FORMAT, "model": name, "reason": reason}))
    except OSError as err:
        logger.debug("cannot write the refusal of %s into %s: %s", name, folder, err)


def _is_mean_pooled(model: SentenceTransformer) -> tuple[bool, str]:
    """Tell whether the model is transformer -> mean pooling -> normalize (what is exported)."""
    modules = list(model.children())
    names = [type(m).__name__ for m in modules]
    if names[:2] != ["Transformer", "Pooling"] or names[2:] not in ([], ["Normalize"]):
        return False, f"modules {names}, not Transformer, Pooling, Normalize"
    config = modules[1].get_config_dict() if hasattr(modules[1], "get_config_dict") else {}
    if config.get("pooling_mode", "mean") != "mean" and not config.get("pooling_mode_mean_tokens"):
        return False, f"pooling {config.get('pooling_mode')!r}, not mean"
    return True, ""


def transformer_body(auto_model: Any, keys: Sequence[str]) -> Any:
    """Wrap a Hugging Face transformer as a module of positional tensors -> token embeddings.

    What tracing and ONNX export need: ``forward(*tensors)`` with the tensors in the order of
    ``keys`` (``input_ids``, ``attention_mask``, ...), returning ``(batch, tokens, hidden)``.
    In eval mode. Imports torch.
    """
    import torch

    names = tuple(keys)

    class _Body(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.auto_model = auto_model

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            return self.auto_model(**dict(zip(names, tensors, strict=True)), return_dict=False)[0]

    return _Body().eval()


def export_encoder(model: SentenceTransformer, name: str, model_path: Path, folder: Path) -> Path | None:
    """Export a loaded model's transformer to ONNX in ``folder``, checked on :data:`PROBES`.

    Args:
        model: The loaded sentence-transformers model (mean pooling, normalised).
        name: The embedder's name (``+int8`` models are not exported).
        model_path: The model's local folder (its ``tokenizer.json`` is used to tokenize).
        folder: Where to write; created if missing.

    Returns:
        The exported file, or None when the model cannot be exported or the check fails (both
        written down as a refusal, see :func:`refusal`), or the export or the folder failed
        (logged at INFO; tried again by the next process). Texts are then embedded by torch.
    """
    ok, why = _is_mean_pooled(model)
    if not ok or "+int8" in name or not (model_path / "tokenizer.json").is_file():
        _refuse(folder, name, model_path, why or "a quantised model or no tokenizer.json")
        return None
    target = encoder_path(folder, name, model_path)
    tmp = ""
    try:
        import torch

        folder.mkdir(parents=True, exist_ok=True)
        auto = list(model.children())[0].auto_model.eval()
        features = model.preprocess([PROBES[1]])
        keys = [k for k in _INPUTS if k in features]

        axes = {k: {0: "batch", 1: "tokens"} for k in [*keys, "token_embeddings"]}
        fd, tmp = tempfile.mkstemp(suffix=".onnx", dir=folder)
        os.close(fd)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer and deprecation warnings of the exporter
            torch.onnx.export(transformer_body(auto, keys), tuple(features[k] for k in keys), tmp, input_names=keys,
                              output_names=["token_embeddings"], dynamic_axes=axes, opset_version=17,
                              dynamo=False)
        meta = {"format": FORMAT, "model": name, "key": model_key(name, model_path), "inputs": keys,
                "max_seq_length": int(model.max_seq_length), "normalize": len(list(model.children())) > 2,
                "dim": int((getattr(model, "get_embedding_dimension", None)
                            or model.get_sentence_embedding_dimension)())}
        encoder = OnnxEncoder(Path(tmp), name, model_path, meta=meta)
        expected = model.encode(list(PROBES), normalize_embeddings=True, convert_to_numpy=True,
                                show_progress_bar=False)
        cosines = [float(encoder.encode(p) @ e) for p, e in zip(PROBES, expected, strict=True)]
        batch = encoder.encode_batch(list(PROBES), batch_size=len(PROBES))
        cosines += [float(a @ e) for a, e in zip(batch, expected, strict=True)]  # padded, as documents are
        if min(cosines) < COSINE_MIN:
            os.unlink(tmp)
            _refuse(folder, name, model_path, f"cosine {min(cosines):.6f} on a probe (< {COSINE_MIN:g})")
            return None
        meta["min_cosine"] = round(min(cosines), 7)
        _write_atomic(target.with_suffix(".json"), json.dumps(meta, indent=1).encode())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, target)
    except Exception as err:  # noqa: BLE001 - texts keep the torch encoder, which works
        logger.info("no ONNX encoder for %s: %s", name, err)
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        return None
    logger.info("exported the encoder of %s to %s (cosine >= %.6f on %d probes)", name, target,
                min(cosines), len(PROBES))
    return target


def copy_encoder(path: Path, folder: Path) -> Path | None:
    """Copy an exported encoder and its description into ``folder`` (atomically); None on failure (logged)."""
    target = folder / path.name
    tmp = ""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write_atomic(target.with_suffix(".json"), path.with_suffix(".json").read_bytes())
        fd, tmp = tempfile.mkstemp(suffix=".onnx", dir=folder)
        os.close(fd)
        shutil.copyfile(path, tmp)
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, target)
    except OSError as err:
        logger.info("cannot copy the encoder %s into %s: %s", path, folder, err)
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)  # a full disk leaves no half copy behind
        return None
    return target


#: Mode of the files written: readable by all, like the rest of a store (``mkstemp`` makes
#: 0600 files, which another user of a shared store or cache could not read).
FILE_MODE = 0o644


def _write_atomic(path: Path, data: bytes) -> None:
    """Write a file whole or not at all (a reader never sees half of it)."""
    fd, tmp = tempfile.mkstemp(suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


class OnnxEncoder:
    """Texts -> vectors with onnxruntime and ``tokenizers``: torch is never imported.

    Args:
        path: The exported ``.onnx`` file; its description (``.json``) lies beside it.
        name: The embedder's name; the file must have been exported for it.
        model_path: The model's local folder (``tokenizer.json``).
        meta: The description, when it is not read from disk (the check of a fresh export).

    Raises:
        ConfigError: If the file was exported for another model or another version of it
            (a store built with one encoder refuses an encoder that does not match it).
        OSError, ValueError: If the file or its description cannot be read.
    """

    def __init__(self, path: Path, name: str, model_path: Path, meta: dict[str, Any] | None = None) -> None:
        self.path = path
        self.meta = meta if meta is not None else json.loads(path.with_suffix(".json").read_text())
        key = model_key(name, model_path)
        if self.meta.get("format") != FORMAT or self.meta.get("model") != name or self.meta.get("key") != key:
            raise ConfigError(
                f"{path}: this encoder was exported for model {self.meta.get('model')!r} "
                f"(key {self.meta.get('key')}), not {name!r} (key {key}); delete it and run a query "
                "or an ingest to export it again"
            )
        import tokenizers

        if not path.is_file():
            raise OSError(f"{path}: no such file")
        self._tokenizer = tokenizers.Tokenizer.from_file(str(model_path / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=int(self.meta["max_seq_length"]))
        self._inputs = tuple(self.meta["inputs"])
        self._sessions: dict[int, Any] = {}
        self._session(1)  # a damaged file fails here, not at the first text

    def _session(self, threads: int) -> Any:
        """Return the onnxruntime session running with ``threads`` intra-op threads (0: one per core)."""
        if threads not in self._sessions:
            import onnxruntime

            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = threads
            options.log_severity_level = 3
            self._sessions[threads] = onnxruntime.InferenceSession(
                str(self.path), options, providers=["CPUExecutionProvider"]
            )
        return self._sessions[threads]

    def encode(self, text: str) -> np.ndarray:
        """Embed one text (a query) on one thread: mean of its token embeddings, L2-normalised; float32 ``(dim,)``.

        One thread: a one-text forward pass only waits on a second thread here.
        """
        enc = self._tokenizer.encode(text)
        arrays = {"input_ids": enc.ids, "attention_mask": enc.attention_mask, "token_type_ids": enc.type_ids}
        feed = {k: np.asarray([arrays[k]], dtype=np.int64) for k in self._inputs}
        tokens = self._session(1).run(None, feed)[0][0]
        mask = np.asarray(enc.attention_mask, dtype=np.float32)[:, None]
        vector = (tokens * mask).sum(axis=0) / max(float(mask.sum()), 1e-9)
        if self.meta.get("normalize", True):
            vector = vector / max(float(np.linalg.norm(vector)), 1e-12)
        return vector.astype(np.float32)

    def encode_batch(self, texts: list[str], batch_size: int = 16, threads: int = 0) -> np.ndarray:
        """Embed texts in forward passes of ``batch_size`` texts of about one length.

        Each text is tokenized once; the texts are taken longest first, so that a pass pads
        little, and each pass pads to its longest text. Padding is masked out of the mean, so a
        text's vector does not depend on its batch beyond float rounding (checked on
        :data:`PROBES` at export).

        Args:
            texts: Texts; longer ones are cut at ``max_seq_length`` word pieces, as
                sentence-transformers cuts them.
            batch_size: Texts per forward pass.
            threads: onnxruntime intra-op threads; 0: one per core.

        Returns:
            float32 ``(len(texts), dim)`` in the order of ``texts``, rows L2-normalised when the
            model normalises.
        """
        out = np.empty((len(texts), int(self.meta["dim"])), dtype=np.float32)
        if not texts:
            return out
        session = self._session(threads)
        encs = self._tokenizer.encode_batch(list(texts))
        order = np.argsort([-len(e.ids) for e in encs], kind="stable")
        size = max(1, batch_size)
        for start in range(0, len(texts), size):
            rows = order[start : start + size]
            width = max(len(encs[j].ids) for j in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            types = np.zeros_like(ids)
            for row, j in enumerate(rows):
                enc = encs[j]
                n = len(enc.ids)
                ids[row, :n], mask[row, :n], types[row, :n] = enc.ids, enc.attention_mask, enc.type_ids
            arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            tokens = session.run(None, {k: arrays[k] for k in self._inputs})[0]
            weights = mask.astype(np.float32)[:, :, None]
            vectors = (tokens * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            if self.meta.get("normalize", True):
                vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
            out[rows] = vectors
        return out
