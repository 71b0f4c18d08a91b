"""The package version (also in pyproject.toml), importable from any layer without the package facade."""

__all__ = ["__version__"]

__version__ = "0.1.0"
