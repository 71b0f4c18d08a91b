"""Runners of the ingest stages on distributed engines: Ray Data (``--engine ray``).

Importing this package imports no engine: Ray loads when :func:`ray_ingest` runs (extra
``ray``). See :mod:`proxypointer.ingest.ray.runner` and docs/scaling.md.
"""

from __future__ import annotations

from .runner import RayResources, check_store, ray_ingest

__all__ = ["RayResources", "check_store", "ray_ingest"]
