r"""Progress bars (tqdm) that suit both a terminal and a batch log.

On a terminal a bar redraws ten times a second (tqdm's default ``mininterval``). When stderr is
a file or a pipe (a batch job's log, CI), every redraw is another ``\r``-separated copy of the
bar in the log: the ingest of QASPER dev's 276 papers by
``scripts/run_experiment.py`` wrote 974 of them in 5 minutes. There a bar redraws at most
every :data:`LOG_INTERVAL_S` seconds (``mininterval``, with tqdm's dynamic ``miniters`` off:
its monitor thread would otherwise redraw a bar idle for ``maxinterval``, 10 s, and the next
update would draw again at once), callers redraw through :func:`tick`, which keeps that
interval, instead of ``tqdm.refresh``, which does not, and each redraw is a line of its own,
the last one the bar's final state (on a terminal the bar is cleared when it closes, for the
summary line that follows).
"""

from __future__ import annotations

import re
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


#: ANSI control sequences tqdm writes to place bars (cursor up, ``\x1b[A``).
_CURSOR = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class _LogLines:
    r"""A bar's stream in a log: each redraw written as a line of its own, ``\r`` left out.

    tqdm draws ``"\r" + bar + padding`` and, when the bar closes, clears it with spaces or
    ends its line; in a file that makes one physical line of every copy, with the next log
    record glued to its end. Cursor moves (a bar at ``position`` 1 moves up after drawing)
    are left out too, and writes that hold nothing but blanks are dropped.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        line = _CURSOR.sub("", text.replace("\r", "")).rstrip()
        if line:
            self._stream.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        flush = getattr(self._stream, "flush", None)
        if flush is not None:
            flush()

    def __getattr__(self, name: str) -> Any:  # encoding, fileno...: the stream's
        return getattr(self._stream, name)


def progress_bar(iterable: Any = None, **kwargs: Any) -> Any:
    """Make a ``tqdm`` bar on stderr, redrawn at most every :data:`LOG_INTERVAL_S` s off a terminal.

    Off a terminal (stderr, whatever ``file`` is given) the bar is redrawn at most every
    :data:`LOG_INTERVAL_S` seconds, each redraw on a line of its own, and ``leave`` is true
    (the log keeps the final state); on a terminal tqdm's pace applies and ``leave`` is false
    (the bar is cleared when it closes).

    Args:
        iterable: Passed to ``tqdm``.
        **kwargs: ``tqdm`` options (``desc``, ``total``, ``unit``, ``file``, ``disable``...);
            an explicit ``mininterval``, ``miniters`` or ``leave`` wins.

    Returns:
        The ``tqdm`` instance.
    """
    from tqdm import tqdm

    terminal = _terminal()
    kwargs.setdefault("leave", not terminal)
    if not terminal:
        kwargs.setdefault("mininterval", LOG_INTERVAL_S)
        kwargs.setdefault("miniters", 0)  # given, it turns off dynamic miniters and the monitor's redraws
        kwargs["file"] = _LogLines(kwargs.get("file") or sys.stderr)
    return tqdm(iterable, **kwargs)


def tick(bar: Any) -> None:
    """Redraw ``bar`` (after a change of its total or postfix) if its ``mininterval`` has passed."""
    bar.update(0)
