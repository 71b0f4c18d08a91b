"""TokenCountCache: word-summed counts equal the tokenizer's, and chunks do not change."""

import pytest

from proxypointer.chunk.chunker import TokenCountCache, chunk_document
from proxypointer.config import ChunkingConfig
from proxypointer.tree.build import build_tree

TEXTS = [
    "Plain words, with punctuation; and (brackets) -- dashes.",
    "Numbers 3.14159 and 2,000,000 and e-mail a.b@c.org and URLs https://x.y/z?q=1",
    "Ünïcödé accents, CJK 中文字符 and emoji 🙂 mixed in.",
    "tabs\tand\nnew lines\r\nand  double  spaces",
    "zero\u200bwidth and non\u00a0breaking spaces",
    "control\x0bcharacters\x0cjoin\x1fwords",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "",
]


@pytest.fixture(scope="module")
def tok(fake_embedder_module):
    return fake_embedder_module.tokenizer


@pytest.fixture(scope="module")
def fake_embedder_module():
    from fakes import HashingEmbedder

    return HashingEmbedder()


@pytest.mark.parametrize("text", TEXTS)
def test_cached_count_equals_tokenizer_count(tok, text):
    cache = TokenCountCache(tok)
    assert cache.sums_words
    assert cache.count(text) == tok.count(text)
    assert cache.count(text) == tok.count(text)  # second time from the cache


def test_counter_without_backend_counts_exactly():
    class Words:
        max_seq_length, n_special = 64, 2

        def count(self, text):
            return len(text.split()) * 2

    cache = TokenCountCache(Words())
    assert not cache.sums_words
    assert cache.count("a b c") == 6 and cache.estimate("a b c") == 6


def test_shared_cache_gives_the_same_chunks(tok):
    text = "# Title\n\n" + "\n\n".join(
        f"## Part {i}\n\n" + " ".join(f"word{j % 37} alpha-beta, gamma." for j in range(120)) for i in range(4)
    )
    tree = build_tree(text, "doc")
    cfg = ChunkingConfig(chunk_tokens=60)
    plain = chunk_document(tree, text, tok, cfg)
    shared = TokenCountCache(tok)
    assert chunk_document(tree, text, shared, cfg) == plain
    assert chunk_document(tree, text, shared, cfg) == plain
    assert all(c.n_tokens == tok.count(c.embed_text) + tok.n_special for c in plain)
