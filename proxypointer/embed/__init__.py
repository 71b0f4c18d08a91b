"""The embed stage, texts -> vectors, and the tokenizer that counts word pieces.

Modules:
    tokenizer    the embedding model's tokenizer, without torch (word-piece counts)
    names        what a store knows its embedder by: backend, model, +int8, document prefix
    embedder     sentence-transformers: texts -> L2-normalised float32 vectors (torch loads lazily)
    onnxencoder  the model's transformer exported once to ONNX: the same vectors without torch
    endpoint     an OpenAI-compatible /v1/embeddings endpoint: the same contract over HTTP, no torch
    make         make_embedder: the class ``embedding.backend`` names

Imports only the base modules (config, errors).
"""

__all__: list[str] = []
