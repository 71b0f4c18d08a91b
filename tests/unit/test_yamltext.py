"""YAML a user hands in is refused when its aliases expand it past a bound (issue 32)."""

from __future__ import annotations

import pytest

from proxypointer.config import load_config
from proxypointer.errors import ConfigError, DocumentError
from proxypointer.tree.outline import load_outline
from proxypointer.yamltext import MAX_YAML_NODES, expanded_size, load_yaml


def _bomb(under: str, levels: int = 9) -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    last = chr(ord("a") + levels - 1)
    return "\n".join(lines) + f"\n{under}: *{last}\n"


def test_expanded_size_counts_each_use_of_an_alias():
    shared = [1, 2, 3]
    assert expanded_size({"x": shared, "y": shared}) == 1 + 2 + 2 * 4
    loop: list = []
    loop.append(loop)
    assert expanded_size(loop) > MAX_YAML_NODES
    assert load_yaml("a: &x [1, 2]\nb: *x\n", "t.yaml") == {"a": [1, 2], "b": [1, 2]}


@pytest.mark.parametrize("under", ["chunking:\n  noise_titles", "store:\n  headers"])
def test_an_alias_bomb_in_a_config_is_refused_before_it_is_walked(tmp_path, under):
    section, key = under.split(":\n  ")
    text = _bomb("bomb").replace("bomb: *", f"{section}:\n  {key}: *")
    path = tmp_path / "bomb.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bomb\.yaml: the YAML expands to more than 100,000 values"):
        load_config(path)


def test_an_alias_bomb_as_an_outline_is_refused(tmp_path):
    path = tmp_path / "gold.yaml"
    path.write_text(_bomb("entries"), encoding="utf-8")
    with pytest.raises(DocumentError, match="expands to more than"):
        load_outline(path)



def test_a_key_written_twice_is_refused_and_a_merge_override_is_not(tmp_path):
    # new-user trial: `chunking:` twice kept the last block without a word
    cfg = tmp_path / "dup.yaml"
    cfg.write_text("chunking: {chunk_tokens: 100}\nretrieval: {k: 3}\nchunking: {chunk_tokens: 50}\n")
    with pytest.raises(ConfigError, match=r"dup.yaml: .*'chunking' is written twice \(first on line 1\)"):
        load_config(cfg)
    # a key merged from an anchor and then given again is YAML's override, not a repeat
    assert load_yaml("base: &b {k: 3, hybrid: true}\nr:\n  <<: *b\n  k: 5\n", "t.yaml")["r"] == {"k": 5, "hybrid": True}


def test_every_shipped_config_and_outline_names_each_key_once():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    files = [*root.glob("configs/**/*.yaml"), *root.glob("tests/gold_outlines*/*.yaml")]
    assert files
    for f in files:
        load_yaml(f.read_text(encoding="utf-8"), str(f))
