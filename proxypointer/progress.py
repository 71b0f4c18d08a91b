r"""Progress bars (tqdm) that suit both a terminal and a batch log.

On a terminal a bar redraws ten times a second (tqdm's default ``mininterval``). When stderr is
a file or a pipe (a batch job's log, CI), every redraw is another ``\r``-separated copy of the
bar in the log: the ingest of QASPER dev's 276 papers by
``scripts/run_experiment.py`` wrote 974 of them in 5 minutes. There the bar redraws at most
every :data:`LOG_INTERVAL_S` seconds (tqdm's ``mininterval`` and its monitor thread's
``maxinterval``, 10 s by default, both set to it), callers redraw through :func:`tick`, which
keeps that interval, instead of ``tqdm.refresh``, which does not, and a closed bar leaves its
final state on a line of its own (on a terminal it is cleared, for the summary line that
follows).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["LOG_INTERVAL_S", "progress_bar", "tick"]

#: Least seconds between two redraws of a bar when stderr is not a terminal.
LOG_INTERVAL_S = 30.0


def _terminal() -> bool:
    stream = sys.stderr
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):  # replaced by an object without isatty, or closed
        return False


def progress_bar(iterable: Any = None, **kwargs: Any) -> Any:
    """Make a ``tqdm`` bar on stderr, redrawn at most every :data:`LOG_INTERVAL_S` s off a terminal.

    Off a terminal ``mininterval`` and ``maxinterval`` are :data:`LOG_INTERVAL_S` and ``leave``
    is true (the log keeps the bar's final state); on a terminal tqdm's pace applies and
    ``leave`` is false (the bar is cleared when it closes).

    Args:
        iterable: Passed to ``tqdm``.
        **kwargs: ``tqdm`` options (``desc``, ``total``, ``unit``, ``disable``...); an explicit
            ``mininterval``, ``maxinterval`` or ``leave`` wins.

    Returns:
        The ``tqdm`` instance.
    """
    from tqdm import tqdm

    terminal = _terminal()
    kwargs.setdefault("leave", not terminal)
    if not terminal:
        kwargs.setdefault("mininterval", LOG_INTERVAL_S)
        # the monitor thread redraws a bar idle for maxinterval s; never sooner than mininterval
        kwargs.setdefault("maxinterval", max(LOG_INTERVAL_S, kwargs["mininterval"]))
    return tqdm(iterable, **kwargs)


def tick(bar: Any) -> None:
    """Redraw ``bar`` (after a change of its total or postfix) if its ``mininterval`` has passed."""
    bar.update(0)
