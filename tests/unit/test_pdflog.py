"""pypdf's warnings hidden while proxypointer reads a PDF, unless the application chose a level."""

from __future__ import annotations

import logging
import threading

import pytest

from proxypointer.pdflog import pypdf_warnings_hidden


@pytest.fixture(autouse=True)
def unset_pypdf_level():
    """No application has chosen a level for pypdf (a CLI test in this process may have)."""
    log = logging.getLogger("pypdf")
    level = log.level
    log.setLevel(logging.NOTSET)
    yield
    log.setLevel(level)


def test_pypdf_warnings_are_hidden_while_reading_and_the_level_is_put_back(caplog):
    log = logging.getLogger("pypdf")
    with caplog.at_level(logging.WARNING), pypdf_warnings_hidden():
        log.warning("EOF marker not found")
        log.error("cannot read the file")
    assert [r.getMessage() for r in caplog.records] == ["cannot read the file"]
    assert log.level == logging.NOTSET


def test_a_level_the_application_set_is_left_alone():
    log = logging.getLogger("pypdf")
    log.setLevel(logging.WARNING)  # proxypointer -v does this
    try:
        with pypdf_warnings_hidden():
            assert log.level == logging.WARNING
        assert log.level == logging.WARNING
    finally:
        log.setLevel(logging.NOTSET)


def test_blocks_in_threads_put_the_level_back_only_when_the_last_one_ends():
    log = logging.getLogger("pypdf")
    inside, release = threading.Event(), threading.Event()

    def reader() -> None:
        with pypdf_warnings_hidden():
            inside.set()
            release.wait(5)

    t = threading.Thread(target=reader)
    t.start()
    assert inside.wait(5)
    with pypdf_warnings_hidden():
        assert log.level == logging.ERROR
    assert log.level == logging.ERROR  # the thread's block is still open
    release.set()
    t.join(5)
    assert log.level == logging.NOTSET
