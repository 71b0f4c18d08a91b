"""What a store knows its embedder by: backend, model, ``+int8`` and the document prefix, in one name.

The name is the store's recorded model (``Store.check_model`` refuses another), the model
part of the embedding cache's key and part of the pipeline key, so that anything that changes
the stored vectors changes it. The query prefix is not part of it: it changes query vectors
only, and the stored vectors stay valid.
"""

from __future__ import annotations

from ..config import EmbeddingConfig

__all__ = ["describe_name", "embedder_name", "model_name"]

#: Marks the document prefix inside a name: ``intfloat/e5-base-v2+document_prefix='passage: '``.
_PREFIX_MARK = "+document_prefix="


def model_name(config: EmbeddingConfig, quantize_int8: bool = False) -> str:
    """Name of the vectors' model without the document prefix.

    Args:
        config: The embedding settings.
        quantize_int8: The model's linear layers are quantised (also on with
            ``config.quantize_int8``).

    Returns:
        ``<model>`` or ``<model>+int8`` for a model in this process (unchanged from stores
        built before backends existed); ``openai:<model>`` for an endpoint.
    """
    if config.backend == "openai":
        return f"openai:{config.model}"
    return config.model + ("+int8" if quantize_int8 or config.quantize_int8 else "")


def embedder_name(config: EmbeddingConfig, quantize_int8: bool = False) -> str:
    """Name of everything that shapes the stored vectors (see the module docstring).

    Args:
        config: The embedding settings.
        quantize_int8: As for :func:`model_name`.

    Returns:
        :func:`model_name`, followed by ``+document_prefix='<prefix>'`` when a document prefix
        is set.
    """
    name = model_name(config, quantize_int8)
    return name + (f"{_PREFIX_MARK}{config.document_prefix!r}" if config.document_prefix else "")


def describe_name(name: str) -> str:
    """Spell out a name in words, for messages.

    Args:
        name: As from :func:`embedder_name` (or a store's recorded model).

    Returns:
        E.g. ``backend openai, model 'nomic-embed-text', document_prefix 'search_document: '``.
    """
    model, _, prefix = name.partition(_PREFIX_MARK)
    backend = "sentence-transformers"
    if model.startswith("openai:"):
        backend, model = "openai", model[len("openai:"):]
    words = f"backend {backend}, model {model!r}"
    return words + (f", document_prefix {prefix}" if prefix else ", no document_prefix")
