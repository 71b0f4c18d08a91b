"""A query encoder without torch: the model's transformer exported once to ONNX, run with onnxruntime.

A cold ``proxypointer query`` spent almost all of its 6-8 s importing torch and
sentence-transformers (5.7 s here) to embed one short query (issue 33). This module exports the
transformer of a sentence-transformers model once, while the model is loaded anyway (at the end
of an ingest, or at the first query of a store built before), and later queries embed with
onnxruntime and the model's own ``tokenizer.json`` (``tokenizers``). Both import in about 0.2 s.

An export is checked before it is kept. Each text of :data:`PROBES` is embedded by
sentence-transformers and by the exported encoder, and every pair must reach a cosine of
:data:`COSINE_MIN`; else nothing is kept, and the reason is logged. Measured for
all-MiniLM-L6-v2: cosine 1.0000 on every probe (largest difference per component 1.3e-7),
about 6.5 ms per query on one core against 13-20 ms for torch.

The file lives in the store folder (``encoders/``), named by the model and by a key of its
files, beside a JSON description. :class:`OnnxQueryEncoder` refuses a file written for another
model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["COSINE_MIN", "FORMAT", "PROBES", "OnnxQueryEncoder", "encoder_path", "export_query_encoder", "model_key"]

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
    """Return 12 hex digits naming a model's files: its name, config and weights' sizes.

    Args:
        name: The embedder's name (the store records it).
        model_path: The model's local folder.
    """
    h = hashlib.sha1(name.encode())
    for file in ("config.json", "tokenizer.json", "modules.json"):
        path = model_path / file
        h.update(path.read_bytes() if path.is_file() else b"-")
    for weights in sorted(model_path.glob("*.safetensors")) + sorted(model_path.glob("*.bin")):
        h.update(f"{weights.name}:{weights.stat().st_size}".encode())
    return h.hexdigest()[:12]


def encoder_path(folder: Path, name: str, model_path: Path) -> Path:
    """Return where the exported encoder of a model lives in ``folder`` (``<name>-<key>.onnx``)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name)
    return folder / f"{safe}-{model_key(name, model_path)}.onnx"


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


def export_query_encoder(model: SentenceTransformer, name: str, model_path: Path, folder: Path) -> Path | None:
    """Export a loaded model's transformer to ONNX in ``folder``, checked on :data:`PROBES`.

    Args:
        model: The loaded sentence-transformers model (mean pooling, normalised).
        name: The embedder's name (``+int8`` models are not exported).
        model_path: The model's local folder (its ``tokenizer.json`` is used at query time).
        folder: Where to write; created if missing.

    Returns:
        The exported file, or None when the model cannot be exported, the check fails or the
        folder cannot be written (each logged once at INFO; queries then use torch).
    """
    ok, why = _is_mean_pooled(model)
    if not ok or "+int8" in name or not (model_path / "tokenizer.json").is_file():
        logger.info("no ONNX query encoder for %s: %s", name, why or "a quantised model or no tokenizer.json")
        return None
    target = encoder_path(folder, name, model_path)
    try:
        import torch

        folder.mkdir(parents=True, exist_ok=True)
        auto = list(model.children())[0].auto_model.eval()
        features = model.preprocess([PROBES[1]])
        keys = [k for k in _INPUTS if k in features]

        class _Body(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.auto_model = auto

            def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
                return self.auto_model(**dict(zip(keys, tensors, strict=True)), return_dict=False)[0]

        axes = {k: {0: "batch", 1: "tokens"} for k in [*keys, "token_embeddings"]}
        fd, tmp = tempfile.mkstemp(suffix=".onnx", dir=folder)
        os.close(fd)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer and deprecation warnings of the exporter
            torch.onnx.export(_Body().eval(), tuple(features[k] for k in keys), tmp, input_names=keys,
                              output_names=["token_embeddings"], dynamic_axes=axes, opset_version=17,
                              dynamo=False)
        meta = {"format": FORMAT, "model": name, "key": model_key(name, model_path), "inputs": keys,
                "max_seq_length": int(model.max_seq_length), "normalize": len(list(model.children())) > 2,
                "dim": int((getattr(model, "get_embedding_dimension", None)
                            or model.get_sentence_embedding_dimension)())}
        encoder = OnnxQueryEncoder(Path(tmp), name, model_path, meta=meta)
        expected = model.encode(list(PROBES), normalize_embeddings=True, convert_to_numpy=True,
                                show_progress_bar=False)
        cosines = [float(encoder.encode(p) @ e) for p, e in zip(PROBES, expected, strict=True)]
        if min(cosines) < COSINE_MIN:
            os.unlink(tmp)
            logger.info("no ONNX query encoder for %s: cosine %.6f on a probe (< %g)", name, min(cosines), COSINE_MIN)
            return None
        meta["min_cosine"] = round(min(cosines), 7)
        target.with_suffix(".json").write_text(json.dumps(meta, indent=1))
        os.replace(tmp, target)
    except Exception as err:  # noqa: BLE001 - queries keep the torch encoder, which works
        logger.info("no ONNX query encoder for %s: %s", name, err)
        if "tmp" in locals() and os.path.exists(tmp):
            os.unlink(tmp)
        return None
    logger.info("exported the query encoder of %s to %s (cosine >= %.6f on %d probes)", name, target,
                min(cosines), len(PROBES))
    return target


class OnnxQueryEncoder:
    """One query -> its vector, with onnxruntime and ``tokenizers``: torch is never imported.

    Args:
        path: The exported ``.onnx`` file; its description (``.json``) lies beside it.
        name: The embedder's name; the file must have been exported for it.
        model_path: The model's local folder (``tokenizer.json``).
        meta: The description, when it is not read from disk (the check of a fresh export).

    Raises:
        ConfigError: If the file was exported for another model or another version of it
            (a store built with one encoder refuses a query encoder that does not match it).
        OSError, ValueError: If the file or its description cannot be read.
    """

    def __init__(self, path: Path, name: str, model_path: Path, meta: dict[str, Any] | None = None) -> None:
        self.meta = meta if meta is not None else json.loads(path.with_suffix(".json").read_text())
        key = model_key(name, model_path)
        if self.meta.get("format") != FORMAT or self.meta.get("model") != name or self.meta.get("key") != key:
            raise ConfigError(
                f"{path}: this query encoder was exported for model {self.meta.get('model')!r} "
                f"(key {self.meta.get('key')}), not {name!r} (key {key}); delete it and run a query "
                "or an ingest to export it again"
            )
        import onnxruntime
        import tokenizers

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # one query: more threads only wait on each other here
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._tokenizer = tokenizers.Tokenizer.from_file(str(model_path / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=int(self.meta["max_seq_length"]))
        self._inputs = tuple(self.meta["inputs"])

    def encode(self, text: str) -> np.ndarray:
        """Embed one text: mean of its token embeddings, L2-normalised; float32 ``(dim,)``."""
        enc = self._tokenizer.encode(text)
        arrays = {"input_ids": enc.ids, "attention_mask": enc.attention_mask, "token_type_ids": enc.type_ids}
        feed = {k: np.asarray([arrays[k]], dtype=np.int64) for k in self._inputs}
        tokens = self._session.run(None, feed)[0][0]
        mask = np.asarray(enc.attention_mask, dtype=np.float32)[:, None]
        vector = (tokens * mask).sum(axis=0) / max(float(mask.sum()), 1e-9)
        if self.meta.get("normalize", True):
            vector = vector / max(float(np.linalg.norm(vector)), 1e-12)
        return vector.astype(np.float32)
