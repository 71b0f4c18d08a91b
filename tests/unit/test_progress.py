"""Progress bars: a batch log gets a redraw every LOG_INTERVAL_S seconds, a terminal tqdm's pace."""

from __future__ import annotations

import io

import pytest

from proxypointer import progress
from proxypointer.progress import LOG_INTERVAL_S, progress_bar, tick


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("stream", "interval"), [(io.StringIO(), LOG_INTERVAL_S), (_Tty(), 0.1)])
def test_the_bar_redraws_at_a_log_pace_off_a_terminal(monkeypatch, stream, interval):
    monkeypatch.setattr(progress.sys, "stderr", stream)
    bar = progress_bar(total=3, desc="ingest", file=stream)
    assert bar.mininterval == interval
    # tqdm's monitor thread redraws a bar idle for maxinterval s (10) when miniters is dynamic,
    # and the next update draws again at once: never in a log
    assert bar.dynamic_miniters == (interval != LOG_INTERVAL_S)
    bar.close()
    assert progress_bar(total=1, mininterval=2.0, file=stream).mininterval == 2.0  # an explicit value wins


def test_a_log_keeps_the_final_state_of_a_closed_bar_and_a_terminal_clears_it(monkeypatch):
    log, tty = io.StringIO(), _Tty()
    for stream in (log, tty):
        monkeypatch.setattr(progress.sys, "stderr", stream)
        bar = progress_bar(total=4, desc="ingest", unit="chunk", file=stream)
        bar.update(4)
        bar.close()
    lines = log.getvalue().split("\n")
    assert "\r" not in log.getvalue() and lines[-1] == ""  # every redraw is a line of its own
    assert all(line.startswith("ingest: ") for line in lines[:-1]) and "4/4" in lines[-2]
    assert not tty.getvalue().endswith("\n") and "4/4" not in tty.getvalue().split("\r")[-1]


def test_tick_redraws_only_when_the_interval_has_passed(monkeypatch):
    log = io.StringIO()
    monkeypatch.setattr(progress.sys, "stderr", log)
    bar = progress_bar(total=0, desc="ingest", unit="chunk", file=log)
    drawn = log.getvalue().count("ingest")
    for _ in range(200):  # a growing total and postfix, as ingest sets them per document
        bar.total += 5
        bar.set_postfix_str("1/2 docs", refresh=False)
        tick(bar)
    assert log.getvalue().count("ingest") == drawn  # none of the 200 within 30 s drew again
    bar.update(1000)
    bar.close()
    assert "1000/1000" in log.getvalue()  # closing draws the final state


def test_a_closed_or_missing_stderr_counts_as_a_log(monkeypatch):
    monkeypatch.setattr(progress.sys, "stderr", None)
    assert progress_bar(total=1, file=io.StringIO()).mininterval == LOG_INTERVAL_S


def test_a_log_gets_no_cursor_moves_from_a_second_bar(monkeypatch):
    # the Ray runner draws documents at position 0 and chunks at position 1; tqdm moves the
    # cursor up after drawing the second, which a log would keep as a line of "\x1b[A"
    log = io.StringIO()
    monkeypatch.setattr(progress.sys, "stderr", log)
    docs = progress_bar(total=2, desc="documents", unit="doc", position=0, file=log)
    chunks = progress_bar(total=0, desc="chunks", unit="chunk", position=1, file=log)
    chunks.total += 4
    chunks.update(4)
    docs.update(2)
    chunks.close()
    docs.close()
    assert "\x1b" not in log.getvalue()
    assert all(line.startswith(("documents: ", "chunks: ")) for line in log.getvalue().splitlines())
