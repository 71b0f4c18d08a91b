"""The embed stage, texts -> vectors, and the tokenizer that counts word pieces.

Modules:
    tokenizer    the embedding model's tokenizer, without torch (word-piece counts)
    embedder     sentence-transformers: texts -> L2-normalised float32 vectors (torch loads lazily)
    onnxencoder  the model's transformer exported once to ONNX: the same vectors without torch

Imports only the base modules (config, errors).
"""

__all__: list[str] = []
