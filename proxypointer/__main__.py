"""``python -m proxypointer``: the same command line as ``proxypointer``."""

from .cli import main

raise SystemExit(main())
