"""A filing's appended exhibits: which sections are instruments, and how a search ranks them (issue 32)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from proxypointer.config import ProxyPointerConfig
from proxypointer.retrieve.exhibits import asks_for_exhibit, exhibit_heads, is_disclosure_exhibit
from proxypointer.retrieve.retriever import Retriever
from proxypointer.tree.build import build_tree

FILING = """\
# PART I

## Item 1. Business

Acme sells kettles and toasters. Its operations span three geographies: North America,
Europe and Asia Pacific, each a reportable segment with its own management.

## Item 3. Legal Proceedings

Acme is a defendant in a patent suit over its kettle thermostat, filed in 2022 in Delaware.

# PART II

## Item 8. Financial Statements

Net sales were 120 million dollars, up 4 percent.

# Exhibit 21 Subsidiaries of Acme Corporation

## Name of subsidiary and jurisdiction

Acme North America Inc (Delaware); Acme Europe Ltd (United Kingdom); Acme Asia Pacific Pte Ltd
(Singapore); Acme Kettles GmbH (Germany); Acme Geographies Holding BV (Netherlands).

# Exhibit 31.1 Certification

I certify that this annual report of Acme does not contain any untrue statement of a material
fact in North America, Europe or Asia Pacific.

# Exhibit 99.1 Press release

Acme reports record kettle sales in Europe and Asia Pacific for the fourth quarter.
"""


def _titles(tree):
    return {n.node_id: n.title for n in tree.nodes}


def test_exhibit_heads_are_the_filings_non_disclosure_exhibits():
    tree = build_tree(FILING, "acme")
    title = _titles(tree)
    heads = {title[n]: title[h] for n, h in exhibit_heads(tree).items()}
    assert heads == {
        "Exhibit 21 Subsidiaries of Acme Corporation": "Exhibit 21 Subsidiaries of Acme Corporation",
        "Name of subsidiary and jurisdiction": "Exhibit 21 Subsidiaries of Acme Corporation",
        "Exhibit 31.1 Certification": "Exhibit 31.1 Certification",
    }  # the press release (99.1) is a disclosure, searched like the body


def test_a_document_that_is_no_filing_has_no_exhibits():
    # a consulting report titles its figures "Exhibit N": no parts or items before them
    report = "# Market study\n\n# Exhibit 3 Sales by region\n\nEurope grew.\n\n# Exhibit 10 Outlook\n\nFlat.\n"
    assert exhibit_heads(build_tree(report, "study")) == {}
    # nor does an exhibit that a filing's contents mention before its first item
    early = "# Exhibit 21 Subsidiaries\n\nA list.\n\n# Part I\n\n## Item 1. Business\n\nText.\n"
    assert exhibit_heads(build_tree(early, "early")) == {}


@pytest.mark.parametrize(
    ("label", "disclosure"), [("13", True), ("13.1", True), ("99.1", True), ("95", True), ("96", True),
                              ("21", False), ("10.36", False), ("31.1", False), ("23.1", False), ("3.2", False)],
)
def test_disclosure_exhibits_follow_regulation_s_k_item_601(label, disclosure):
    assert is_disclosure_exhibit(label) is disclosure


def test_a_query_asks_for_an_exhibit_by_the_word_or_by_a_subject_word_of_its_title():
    title = "Exhibit 21 Subsidiaries of Acme Corporation"
    assert asks_for_exhibit("What does exhibit 21 list?", title, "Name of subsidiary")
    assert asks_for_exhibit("Which subsidiaries does Acme have?", title, "Name of subsidiary")
    assert not asks_for_exhibit("What geographies does Acme operate in?", title, "Name of subsidiary", "acme-10k")
    # a helper's repro: the usual 10-K wording shares one word with the question, not two
    assert asks_for_exhibit("Which subsidiaries does the company have?", "Exhibit 21 Subsidiaries of the Registrant",
                            "")
    assert asks_for_exhibit("Which subsidiary is in Germany?", "Exhibit 21 Subsidiaries of the Registrant", "")
    # the company's name, its legal form and the filing's dates name no subject
    pep = "EXHIBIT 21 PEPSICO, INC. SUBSIDIARIES (as of December 31, 2022)"
    assert not asks_for_exhibit("What are the geographies that PepsiCo operates in as of December 31, 2022?", pep,
                                "Entity Name Jurisdiction", "PEPSICO_2022_10K")
    assert not asks_for_exhibit("Has PepsiCo any ongoing legal battles?", "EXHIBIT 31", "CERTIFICATION",
                                "PEPSICO_2022_10K")


def _retrievers(make_index, tmp_path) -> tuple[Retriever, Retriever]:
    """Retrievers over one filing: ``demote_exhibits`` off, then on."""
    doc = tmp_path / "docs" / "acme-10k.md"
    doc.parent.mkdir()
    doc.write_text(FILING, encoding="utf-8")
    out = []
    for demote in (False, True):
        base = ProxyPointerConfig()
        cfg = replace(base, retrieval=replace(base.retrieval, demote_exhibits=demote))
        idx = make_index(config=cfg, store=tmp_path / f"store-{demote}")
        assert idx.ingest([doc.parent], show_progress=False).indexed == 1
        out.append(Retriever(idx))
    return out[0], out[1]


def _titles_of(retriever: Retriever, query: str) -> list[str]:
    return [s.title for s in retriever.retrieve(query, k=6)]


def test_a_question_about_the_business_gets_the_body_before_the_exhibits(make_index, tmp_path):
    query = "What geographies does Acme operate in: North America, Europe, Asia Pacific?"
    off, on = (_titles_of(r, query) for r in _retrievers(make_index, tmp_path))
    exhibits = {"Name of subsidiary and jurisdiction", "Exhibit 31.1 Certification"}
    assert exhibits & set(off[:2])  # the lists and certifications share the question's words
    body = [t for t in on if t not in exhibits]
    assert on[: len(body)] == body and set(on[len(body):]) <= exhibits  # after every other section
    assert [t for t in off if t not in exhibits] == body  # the rest keep their order
    assert "Exhibit 99.1 Press release" in body


def test_a_question_that_names_the_exhibit_still_gets_it_first(make_index, tmp_path):
    off, on = _retrievers(make_index, tmp_path)
    for query in ("Exhibit 21 subsidiaries Acme Europe", "Which subsidiaries of Acme Corporation are in Europe?",
                  "Which subsidiaries does the company have?"):
        got = _titles_of(on, query)
        assert got[0] == _titles_of(off, query)[0] == "Name of subsidiary and jurisdiction", query
    # the certification answers neither, so it still goes last
    assert _titles_of(on, "Which subsidiaries of Acme Corporation are in Europe?")[-1] == "Exhibit 31.1 Certification"
