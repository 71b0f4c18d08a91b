import dataclasses
from pathlib import Path

import pytest

from proxypointer.config import ChunkingConfig, ProxyPointerConfig, config_from_dict, load_config
from proxypointer.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_default_yaml_equals_builtin_defaults():
    assert load_config(ROOT / "configs" / "default.yaml") == ProxyPointerConfig()


def test_none_gives_defaults():
    assert load_config(None) == ProxyPointerConfig()


def test_unknown_key_is_rejected_with_file_and_valid_keys(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("chunking:\n  chunk_size: 100\n")
    with pytest.raises(ConfigError) as err:
        load_config(f)
    msg = str(err.value)
    assert str(f) in msg and "chunk_size" in msg and "chunk_tokens" in msg


def test_wrong_type_and_range_are_rejected(tmp_path):
    with pytest.raises(ConfigError, match="chunking.chunk_tokens"):
        config_from_dict({"chunking": {"chunk_tokens": "big"}})
    with pytest.raises(ConfigError, match="chunking.chunk_tokens"):
        config_from_dict({"chunking": {"chunk_tokens": -5}})
    with pytest.raises(ConfigError, match="store.mode"):
        config_from_dict({"store": {"mode": "cloud"}})
    with pytest.raises(ConfigError, match="overlap"):
        ChunkingConfig(chunk_tokens=100, overlap_tokens=100)


def test_a_config_that_is_not_utf8_or_has_a_top_level_typo_says_so_in_one_line(tmp_path):
    # new-user trial: a UTF-16 file ended in a traceback; a top-level typo showed an empty key path
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfer\x00")
    message = r"bin.yaml: not UTF-8 text \(byte 0xff at offset 0\); save the config as UTF-8"
    with pytest.raises(ConfigError, match=message):
        load_config(binary)
    typo = tmp_path / "typo.yaml"
    typo.write_text("chunkng:\n  chunk_tokens: 100\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(typo)
    assert str(err.value).startswith(f"{typo}: unknown key(s) ['chunkng']; valid keys: ['tree', ")


def test_invalid_yaml_names_the_file(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("chunking: [unclosed\n")
    with pytest.raises(ConfigError, match="bad.yaml"):
        load_config(f)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="nope.yaml"):
        load_config(tmp_path / "nope.yaml")


def test_partial_sections_keep_other_defaults():
    cfg = config_from_dict({"retrieval": {"k": 3}, "chunking": {"noise_titles": ["glossary"]}})
    assert cfg.retrieval.k == 3
    assert cfg.chunking.noise_titles == ("glossary",)
    assert cfg.embedding == ProxyPointerConfig().embedding
    assert dataclasses.is_dataclass(cfg)


def test_quality_yaml_is_an_alias_of_the_defaults():
    # configs/quality.yaml switched on what are the defaults since the reports round; the QASPER
    # experiment's pipeline is that pipeline too.
    import yaml

    from proxypointer.config import config_from_dict

    experiment = yaml.safe_load((ROOT / "configs" / "experiments" / "qasper-dev.yaml").read_text())
    quality = load_config(ROOT / "configs" / "quality.yaml")
    assert quality == config_from_dict(experiment["pipeline"]) == ProxyPointerConfig()


def test_fast_yaml_keeps_the_speed_settings():
    fast = load_config(ROOT / "configs" / "fast.yaml")
    assert fast.chunking.chunk_tokens == 200
    r = fast.retrieval
    assert (r.hybrid, r.section_scoring, r.title_routing_docs, r.title_weight) == (False, "max", 0, 0.0)
    assert r.label_lookup and r.subtree_cap_tokens == ProxyPointerConfig().retrieval.subtree_cap_tokens


def test_weights_must_be_finite(tmp_path):
    # `.inf` passed every ">= 0" check and turned every fused score into inf
    for key in ("lexical_weight", "focus_weight"):
        path = tmp_path / f"{key}.yaml"
        path.write_text(f"retrieval:\n  {key}: .inf\n")
        with pytest.raises(ConfigError, match=f"{key}.yaml: retrieval.{key}: expected a finite number"):
            load_config(path)


def test_an_unquoted_off_is_refused_with_the_quoting_hint_and_a_quoted_one_works(tmp_path):
    # new-user trial: `encoder_cache: off`, as configs/default.yaml's comment reads, is YAML's false
    bad = tmp_path / "off.yaml"
    bad.write_text("embedding:\n  encoder_cache: off\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"embedding\.encoder_cache: expected a string, got False.*quote it"):
        load_config(bad)
    good = tmp_path / "quoted.yaml"
    good.write_text("embedding:\n  encoder_cache: 'off'\n", encoding="utf-8")
    assert load_config(good).embedding.encoder_cache == "off"


# -- embedding backends ---------------------------------------------------------------------------
def test_the_openai_backend_needs_an_http_base_url():
    with pytest.raises(ConfigError, match="embedding.base_url: backend openai needs an http"):
        config_from_dict({"embedding": {"backend": "openai", "model": "nomic-embed-text"}}, "t.yaml")
    cfg = config_from_dict({"embedding": {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1"}})
    assert cfg.embedding.backend == "openai" and cfg.embedding.api_key_env == "OPENAI_API_KEY"


def test_the_openai_backend_needs_the_endpoints_model_name():
    # found by a new user: without `model`, requests went out for "all-MiniLM-L6-v2" and the
    # store was labelled so, whatever the server ran
    with pytest.raises(ConfigError, match="embedding.model: backend openai needs the model's name"):
        config_from_dict({"embedding": {"backend": "openai", "base_url": "http://127.0.0.1:1/v1"}}, "t.yaml")
    tei = {"backend": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "sentence-transformers/all-MiniLM-L6-v2"}
    assert config_from_dict({"embedding": tei}).embedding.model == "sentence-transformers/all-MiniLM-L6-v2"


@pytest.mark.parametrize(
    ("embedding", "match"),
    [({"backend": "ollama"}, "embedding.backend: expected one of"),
     ({"base_url": "http://x/v1"}, "embedding.base_url: only for backend openai"),
     ({"tokenizer": "/models/bge"}, "embedding.tokenizer: only for backend openai"),
     ({"max_seq_length": 512}, "embedding.max_seq_length: only for backend openai"),
     ({"backend": "openai", "base_url": "http://x/v1", "model": "m", "quantize_int8": True}, "embedding.quantize_int8"),
     ({"backend": "openai", "base_url": "http://x/v1", "model": "m", "timeout_s": 0}, "embedding.timeout_s"),
     ({"backend": "openai", "base_url": "http://x/v1", "model": "m", "max_retries": -1}, "embedding.max_retries"),
     ({"backend": "openai", "base_url": "http://x/v1", "model": "m", "max_seq_length": 8}, "embedding.max_seq_length")],
)
def test_embedding_backend_settings_are_checked(embedding, match):
    with pytest.raises(ConfigError, match=match):
        config_from_dict({"embedding": embedding}, "t.yaml")


def test_the_readme_embedding_examples_load():
    import re

    import yaml

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Embedding models and endpoints"):]
    section = section[: section.index("\n## ", 1)]
    blocks = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 4
    backends = [config_from_dict(yaml.safe_load(b), "README.md").embedding.backend for b in blocks]
    assert backends == ["sentence-transformers", "openai", "openai", "openai"]
