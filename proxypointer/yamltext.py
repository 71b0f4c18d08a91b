"""YAML a user hands in (``--config``, a gold outline), read with its expanded size bounded.

``yaml.safe_load`` keeps an alias as a reference, so a "billion laughs" document (each level
a list of nine aliases of the one before) loads in microseconds; whatever walks it afterwards
(type checks, conversions, an error message that shows the value) expands it: nine levels
took 33 s and 4 GB before a type error, and under a free-form mapping memory grew without
limit. The loaded value is measured as if every alias were expanded, counting each shared
node once per reference with memoisation (linear in the document's own size), and refused
past :data:`MAX_YAML_NODES`.
"""

from __future__ import annotations

from typing import Any

from .errors import ConfigError

__all__ = ["MAX_YAML_NODES", "expanded_size", "load_yaml"]

#: Most values (scalars, lists, mappings and keys) a YAML file may expand to. The largest
#: shipped config (configs/experiments/defaults-financebench-dev-md.yaml, anchors included) expands to 638.
MAX_YAML_NODES = 100_000


def expanded_size(value: Any, limit: int = MAX_YAML_NODES) -> int:
    """Count the values in ``value`` with every shared reference counted each time it is used.

    Args:
        value: What ``yaml.safe_load`` returned.
        limit: Counting stops once the count passes this.

    Returns:
        The count, or a number above ``limit`` once it is passed.
    """
    memo: dict[int, int] = {}

    def size(v: Any, depth: int) -> int:
        if not isinstance(v, dict | list):
            return 1
        key = id(v)
        if key in memo:
            return memo[key]
        if depth > 200:  # deeper than any config: a recursive alias (a list that holds itself)
            return limit + 1
        memo[key] = limit + 1  # a value met again while it is being counted: recursive
        items = [*v.keys(), *v.values()] if isinstance(v, dict) else v
        total = 1
        for item in items:
            total += size(item, depth + 1)
            if total > limit:
                break
        memo[key] = total
        return total

    return size(value, 0)


_LOADER: list[type] = []


def _unique_key_loader() -> type:
    """``yaml.SafeLoader`` that refuses a key written twice in one mapping.

    PyYAML keeps the last of two equal keys without a word (``chunking:`` twice: the first
    block is silently lost); a key merged in from an alias (``<<: *base``) and then written
    again is an override, as YAML means it, and is allowed.
    """
    if _LOADER:
        return _LOADER[0]
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: dict[Any, int] = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node, deep=True)
                    try:
                        first = seen.setdefault(key, key_node.start_mark.line)
                    except TypeError:  # an unhashable key: PyYAML refuses it itself
                        continue
                    if first != key_node.start_mark.line:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"key {key!r} is written twice (first on line {first + 1})",
                            key_node.start_mark)
            return super().construct_mapping(node, deep=deep)

    _LOADER.append(UniqueKeyLoader)
    return UniqueKeyLoader


def load_yaml(text: str, source: str) -> Any:
    """Parse YAML safely (``yaml.safe_load``) and refuse a document that expands too far.

    Args:
        text: The YAML text.
        source: The file it came from, for messages.

    Returns:
        The loaded value.

    Raises:
        ConfigError: If the text is not valid YAML, names a key twice in one mapping, or it
            expands to more than
            :data:`MAX_YAML_NODES` values (aliases counted at each use).
    """
    import yaml

    try:
        data = yaml.load(text, Loader=_unique_key_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        raise ConfigError(f"{source}: invalid YAML ({err})") from err
    if expanded_size(data) > MAX_YAML_NODES:
        raise ConfigError(
            f"{source}: the YAML expands to more than {MAX_YAML_NODES:,} values once its aliases (*name) "
            "are expanded; a config or outline is far smaller: remove the aliases that repeat others"
        )
    return data
