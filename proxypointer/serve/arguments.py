"""Request arguments checked one way over HTTP and MCP: JSON types as sent, no unknown names.

Both front ends validate arguments with pydantic models (FastAPI's request bodies, the MCP
SDK's per-tool argument models). By default pydantic coerces (``"k": "3"`` and ``"k": true``
become integers) and ignores names it does not know (``doc_id`` for ``doc_ids`` would search
every document). Here both are refused: pydantic's strict mode for the types, and a check
that names the valid arguments for unknown ones. Validation errors are reported without the
input value, which may not be JSON (``1e400`` reads as infinity) or not text (a lone
surrogate).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from ..docids import escaped

__all__ = ["StrictArguments", "strict_model", "validation_detail"]


def _names(model: type[BaseModel]) -> list[str]:
    return sorted(field.alias or name for name, field in model.model_fields.items())


class StrictArguments(BaseModel):
    """Base of an argument model: strict JSON types, unknown names refused with the valid ones."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _known_names(cls, data: Any) -> Any:
        if isinstance(data, dict):
            valid = _names(cls)
            unknown = sorted(escaped(str(k)) for k in data if k not in valid)
            if unknown:
                raise ValueError(f"unknown argument(s) {unknown}; the arguments are {valid}")
        return data


def strict_model(model: type[BaseModel]) -> type[BaseModel]:
    """Return a subclass of ``model`` that validates like :class:`StrictArguments`.

    Args:
        model: An argument model (the MCP SDK builds one per tool from its signature).

    Returns:
        The subclass, with the same fields and the same name.
    """
    config = ConfigDict(**{**model.model_config, "extra": "forbid", "strict": True})
    return type(model.__name__, (StrictArguments, model), {"model_config": config, "__module__": model.__module__})


def validation_detail(errors: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return pydantic validation errors as JSON-safe items, without the values sent.

    Args:
        errors: ``ValidationError.errors()`` (or FastAPI's ``RequestValidationError.errors()``).

    Returns:
        ``[{"loc": [...], "msg": str, "type": str}]``; the location's parts as strings or ints.
    """
    out = []
    for e in errors:
        loc = [p if isinstance(p, int) else str(p) for p in e.get("loc", ())]
        out.append({"loc": loc, "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))})
    return out
