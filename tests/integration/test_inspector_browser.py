"""``serve http``'s inspector page in a real browser: headless Chromium driven by selenium.

A real server (tests/integration/serve_driver.py, the test embedder) over ``data/`` and a small
PDF (written by reportlab, converted by the fake converter of the unit tests), a real browser
(Debian's ``chromium`` and ``chromium-driver``; ``.ci/run`` installs them). The test types a
query, sees the right section first with its matched chunk highlighted, reads why it ranked,
opens the document's outline, follows an entry, and follows a PDF page link. Screenshots go
to ``tests/artifacts/inspector/`` (``PROXYPOINTER_ARTIFACTS`` elsewhere); the time from the
query's answer to the first screen is printed, never asserted.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from serve_driver import Server

from proxypointer.config import ProxyPointerConfig
from proxypointer.index import Index

pytestmark = pytest.mark.integration

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (dev extra) drives the browser")
pytest.importorskip("reportlab", reason="reportlab (dev dependency) writes the test PDF")
pytest.importorskip("pypdf", reason="pypdf (extra pdf) counts the pages of the test PDF")

from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
UNIT_TESTS = ROOT / "tests" / "unit"
ARTIFACTS = Path(os.environ.get("PROXYPOINTER_ARTIFACTS", ROOT / "tests" / "artifacts")) / "inspector"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: The section of data/ that "parental leave pay" must find first (as test_serve_http's queries).
LEAVE_PAY = ["Employee Handbook", "3 Leave", "3.2 Parental leave", "3.2.2 Pay during parental leave"]


def _browser_paths() -> tuple[str, str]:
    """The Chromium binary and its driver; skips, saying what to install, when either is missing."""
    binary = next((p for p in map(shutil.which, BROWSERS) if p), None)
    driver = shutil.which("chromedriver") or next(
        (p for p in ("/usr/lib/chromium/chromedriver", "/usr/bin/chromedriver") if os.access(p, os.X_OK)), None)
    if binary is None or driver is None:
        missing = " and ".join(n for n, p in (("chromium", binary), ("chromedriver", driver)) if p is None)
        pytest.skip(f"no {missing} on this machine: apt-get install chromium chromium-driver (.ci/run does)")
    return binary, driver


@pytest.fixture(scope="module", autouse=True)
def no_server_left_running():
    """After the module: every Server was stopped by pid (no leaked child)."""
    yield
    out = subprocess.run(["ps", "-o", "pid=,args=", "--ppid", str(os.getpid())], capture_output=True, text=True)
    assert "serve_driver.py" not in out.stdout


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """data/'s three handbooks and a three-page PDF report, indexed with the test embedder."""
    from fakes import FakePDFConverter, HashingEmbedder
    from pdfdocs import write_report

    from proxypointer.read.readers import PDFReader

    sys.path.insert(0, str(UNIT_TESTS))
    from test_pdf_ingest import REPORT_MD  # what opendataloader-pdf writes for write_report

    base = tmp_path_factory.mktemp("inspector")
    corpus = base / "docs"
    corpus.mkdir()
    for md in DATA.glob("*.md"):
        shutil.copy(md, corpus / md.name)
    write_report(corpus / "report.pdf")
    path = base / "store"
    with Index(path, ProxyPointerConfig(), HashingEmbedder()) as index:
        converter = FakePDFConverter({"report.pdf": REPORT_MD})
        index.readers[".pdf"] = PDFReader(index.config.pdf, cache=index.root / "converted", converter=converter)
        report = index.ingest([corpus], show_progress=False)
        assert (report.indexed, report.failed) == (4, [])
    return path


@pytest.fixture(scope="module")
def server(store):
    with Server([str(store), "http"]) as srv:
        yield srv.wait_ready()


@pytest.fixture(scope="module")
def browser():
    binary, driver = _browser_paths()
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service as DriverService

    options = Options()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,900", "--force-device-scale-factor=1", "--lang=en-US"):
        options.add_argument(arg)
    try:
        chrome = webdriver.Chrome(options=options, service=DriverService(driver))
    except WebDriverException as err:
        pytest.skip(f"headless Chromium did not start ({binary}, {driver}): {err.msg}")
    chrome.set_page_load_timeout(60)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    yield chrome
    chrome.quit()


def _wait(browser, condition, timeout: float = 30.0):
    return WebDriverWait(browser, timeout).until(condition)


def _screenshot(browser, name: str) -> Path:
    path = ARTIFACTS / f"{name}.png"
    browser.save_screenshot(str(path))
    print(f"screenshot: {path}")
    return path


def _search(browser, url: str, query: str, k: int = 5):
    """Load the page, type the query in the box it focuses, press Enter; return the result cards."""
    browser.get(url + "/")
    box = _wait(browser, lambda b: b.find_element(By.ID, "q"))
    assert browser.switch_to.active_element == box  # focused on load: type at once
    k_box = browser.find_element(By.ID, "k")
    k_box.clear()
    k_box.send_keys(str(k))
    box.send_keys(query, Keys.ENTER)
    _wait(browser, lambda b: b.find_element(By.ID, "results").get_attribute("data-state") == "done")
    return browser.find_elements(By.CSS_SELECTOR, "#results article.card")


def test_a_query_shows_its_section_first_with_the_match_highlighted_and_why_it_ranked(browser, server):
    cards = _search(browser, server.url, "parental leave pay")
    assert cards, browser.find_element(By.ID, "status").text
    first = cards[0]
    crumbs = [c.text for c in first.find_elements(By.CSS_SELECTOR, ".crumbs .crumb")]
    assert crumbs == LEAVE_PAY
    citation = first.find_element(By.CSS_SELECTOR, ".citation").text
    expected = httpx.post(server.url + "/query", json={"query": "parental leave pay", "k": 5}).json()["sections"][0]
    assert citation == expected["citation"] and citation.startswith("employee-handbook.md#L")
    mark = first.find_element(By.CSS_SELECTOR, "mark.hit")
    lines = [int(s.get_attribute("data-n")) for s in mark.find_elements(By.CSS_SELECTOR, ".ln")]
    assert lines == list(range(expected["chunk_start_line"], expected["chunk_end_line"] + 1))
    assert "full basic pay" in mark.text
    delivery = first.find_element(By.CSS_SELECTOR, ".delivery").text
    assert delivery == "whole section"  # the delivery policy is visible
    timings = browser.execute_script("return window.inspectorTimings")
    print(f"inspector timings on data/ (test embedder): query {timings['queryMs']:.0f} ms, first screen "
          f"{timings['renderMs']:.0f} ms after the answer ({timings['sections']} sections)")
    # why it ranked: what fusion saw
    first.find_element(By.CSS_SELECTOR, "details.why > summary").click()
    _wait(browser, lambda b: b.find_element(By.ID, "results").get_attribute("data-why") == "done")
    rows = {r.get_attribute("data-signal"): r for r in first.find_elements(By.CSS_SELECTOR, "details.why tbody tr")}
    assert {"dense", "lexical", "titles"} <= set(rows)
    assert rows["dense"].find_elements(By.TAG_NAME, "td")[2].text == "1"
    assert "fused chunk rank 1" in first.find_element(By.CSS_SELECTOR, "details.why").text
    _screenshot(browser, "inspector-results")


def test_a_link_to_a_search_runs_it_with_k_in_range_and_follows_a_changed_hash(browser, server):
    # found by a new user: #q=...&k=0 searched with the default k while the box showed 0, and a
    # changed hash did nothing
    done = lambda b: b.find_element(By.ID, "results").get_attribute("data-state") == "done"  # noqa: E731
    browser.get(server.url + "/#q=parental%20leave%20pay&k=0")
    _wait(browser, done)
    assert browser.find_element(By.ID, "k").get_attribute("value") == "5"  # the k searched: the default
    assert len(browser.find_elements(By.CSS_SELECTOR, "#results article.card")) == 5
    browser.execute_script("location.hash = '#q=notice%20period&k=99'")
    _wait(browser, lambda b: b.find_element(By.ID, "q").get_attribute("value") == "notice period" and done(b))
    assert browser.find_element(By.ID, "k").get_attribute("value") == "20"
    assert browser.current_url.endswith("#q=notice%20period&k=20")


def test_the_document_outline_opens_a_section(browser, server):
    cards = _search(browser, server.url, "parental leave pay", k=3)
    cards[0].find_element(By.CSS_SELECTOR, "details.why > summary").click()  # shown in the screenshot
    # by keyboard: Tab from the query box reaches the first result's "Open in document", Enter opens it
    target = cards[0].find_element(By.CSS_SELECTOR, "button.open-doc")
    browser.find_element(By.ID, "q").click()
    for _ in range(12):
        if browser.switch_to.active_element == target:
            break
        browser.switch_to.active_element.send_keys(Keys.TAB)
    assert browser.switch_to.active_element == target
    target.send_keys(Keys.ENTER)
    pane = _wait(browser, lambda b: b.find_element(By.ID, "document"))
    _wait(browser, lambda b: pane.is_displayed() and b.find_element(By.ID, "doc-section").is_displayed())
    assert browser.find_element(By.ID, "doc-title").text == "Employee Handbook"
    entries = browser.find_elements(By.CSS_SELECTOR, "#outline li")
    assert len(entries) > 10 and all(e.find_element(By.CSS_SELECTOR, ".lines").text.startswith("L") for e in entries)
    annual = next(e for e in entries if e.find_element(By.TAG_NAME, "button").text == "3.1 Annual leave")
    entry = annual.find_element(By.TAG_NAME, "button")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", entry)  # clear of the sticky title
    entry.click()
    _wait(browser, lambda b: b.find_element(By.ID, "doc-section").get_attribute("data-node")
          == annual.get_attribute("data-node"))
    section = browser.find_element(By.ID, "doc-section")
    assert section.find_element(By.TAG_NAME, "h3").text.endswith("3.1 Annual leave")
    assert browser.switch_to.active_element == section  # focus follows the opened section
    assert "current" in annual.get_attribute("class")
    browser.execute_script("window.scrollTo(0, 0)")
    _screenshot(browser, "inspector-document")  # docs/img/inspector.png is this one, made small
    section.send_keys(Keys.ESCAPE)  # the keyboard closes it again
    _wait(browser, lambda b: not b.find_element(By.ID, "document").is_displayed())


def test_a_pdf_section_links_to_its_page_of_the_served_pdf(browser, server):
    cards = _search(browser, server.url, "roadrunners competition desert equipment", k=3)
    first = cards[0]
    assert first.get_attribute("data-doc") == "report"
    assert first.find_element(By.CSS_SELECTOR, ".citation").text.startswith("report.pdf#page=1 (pp. 1-2;")
    link = first.find_element(By.CSS_SELECTOR, "a.pdf-link")
    href = link.get_attribute("href")
    assert href == server.url + "/documents/report/file#page=1"
    served = httpx.get(href.split("#")[0])
    assert served.status_code == 200 and served.headers["content-type"] == "application/pdf"
    assert served.content.startswith(b"%PDF")
    page = browser.current_window_handle
    link.click()
    _wait(browser, lambda b: len(b.window_handles) == 2)
    browser.switch_to.window(next(h for h in browser.window_handles if h != page))
    try:
        _wait(browser, lambda b: b.current_url.endswith("/documents/report/file#page=1"))
        time.sleep(1.0)  # the PDF viewer paints after the load: only for the screenshot
        _screenshot(browser, "inspector-pdf")
    finally:
        browser.close()
        browser.switch_to.window(page)
    # the markdown of data/ has no file to open: only registered PDFs are served
    refused = httpx.get(server.url + "/documents/employee-handbook/file")
    assert refused.status_code == 404 and "not a PDF" in refused.json()["detail"]
