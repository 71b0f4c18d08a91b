"""Title routing: which titles a query names (restricting its search), and which it only resembles."""

from __future__ import annotations

import pytest

from proxypointer.config import ProxyPointerConfig, RetrievalConfig
from proxypointer.retrieve.retriever import Retriever
from proxypointer.retrieve.routing import NAMING_TITLE_WORDS, TitleRouter

# Six small documents, more than the routing takes (title_routing_docs=2), so routing applies.
DOCS = {
    "leave": "# Leave\n\n## Annual leave\n\nStaff take 25 days of annual leave a year.\n",
    "fire-safety": "# Fire Safety Procedures\n\n## Evacuation\n\nWhen the fire alarm sounds, leave the "
                   "building by the nearest exit and gather at the assembly point.\n",
    "pump-station": "# Pump Station\n\n## Pressure\n\nThe pump station holds 6 bar.\n",
    "acme-10k": "# FORM 10-K\n\n## Revenue\n\nAcme revenue grew 4 percent.\n",
    "globex-10k": "# FORM 10-K\n\n## Revenue\n\nGlobex revenue fell 2 percent.\n",
    "initech-10k": "# FORM 10-K\n\n## Revenue\n\nInitech revenue was flat.\n",
}


@pytest.fixture
def store(make_index, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / f"{name}.md").write_text(text)
    idx = make_index(ProxyPointerConfig(retrieval=RetrievalConfig(title_routing_docs=2)))
    assert not idx.ingest([corpus], show_progress=False).failed
    return idx


def test_a_query_naming_a_specific_title_searches_that_document_only(store):
    route = TitleRouter(store).route("Fire Safety Procedures: where is the assembly point?", None)
    assert route.named == ("fire-safety",)
    assert route.query == "where is the assembly point?"
    got = Retriever(store).retrieve("Fire Safety Procedures: where is the assembly point?", k=1)
    assert got[0].doc_id == "fire-safety"


def test_a_one_word_title_used_as_a_word_of_the_question_does_not_restrict_the_search(store):
    # A fresh user's report: a document titled "Leave" captured every question with "leave" in it,
    # restricted to that document, with the word removed from the query.
    assert NAMING_TITLE_WORDS == 2
    q = "When must I leave the building during a fire alarm?"
    route = TitleRouter(store).route(q, None)
    assert route.named == () and route.query == q and route.where is None
    got = Retriever(store).retrieve(q, k=3)
    assert "fire-safety" in {s.doc_id for s in got}


def test_a_title_inside_longer_words_is_not_named(store):
    q = "How many pump stations does the network have?"
    route = TitleRouter(store).route(q, None)
    assert route.named == () and route.query == q


def test_a_title_shared_by_documents_names_none_of_them(store):
    # "FORM 10-K" titles three filings here (a dozen in FinanceBench): naming it picks no filing,
    # however few share it, and the query keeps its words
    q = "What does the Form 10-K say about revenue?"
    route = TitleRouter(store).route(q, None)
    assert route.named == () and route.query == q and route.where is None
    assert {s.doc_id for s in Retriever(store).retrieve(q, k=3)} == {"acme-10k", "globex-10k", "initech-10k"}
    scope = {"doc_id": {"$in": ["acme-10k", "globex-10k", "leave"]}}  # two of them in scope
    assert TitleRouter(store).route("FORM 10-K revenue", scope).named == ()


def test_a_title_shared_only_outside_the_scope_names_its_document(store):
    scope = {"doc_id": {"$in": ["acme-10k", "leave", "pump-station"]}}
    route = TitleRouter(store).route("FORM 10-K revenue", scope)
    assert route.named == ("acme-10k",) and route.query == "revenue"


def test_the_named_title_is_removed_as_whole_words_only():
    # "Smart History vs Art History": the title "Art History" is the second one, not "...art History"
    from proxypointer.retrieve.routing import strip_titles

    assert strip_titles("Smart History vs Art History: who used chiaroscuro?", ["Art History"]) == (
        "Smart History vs : who used chiaroscuro?"
    )
    assert strip_titles("Fire Safety Procedures. Where do we meet?", ["fire safety procedures"]) == "Where do we meet?"


def test_a_title_is_named_whatever_its_markup_quotes_or_unicode_form(make_index, tmp_path):
    import unicodedata

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "green.md").write_text("# The *Green* Manual\n\n## Ferns\n\nWater ferns weekly.\n")
    (corpus / "cafe.md").write_text(unicodedata.normalize("NFD", "# Café Opening Guide\n\n## Hours\n\nOpen at 7.\n"))
    (corpus / "quote.md").write_text("# The \u201cNorth\u201d Site Notes\n\n## Gate\n\nThe key is in the box.\n")
    for name in ("a", "b"):
        (corpus / f"{name}.md").write_text(f"# Other Document {name}\n\n## Ferns\n\nNothing about ferns.\n")
    idx = make_index(ProxyPointerConfig(retrieval=RetrievalConfig(title_routing_docs=2)))
    assert not idx.ingest([corpus], show_progress=False).failed
    router = TitleRouter(idx)
    route = router.route("The Green Manual: how often are ferns watered?", None)
    assert route.named == ("green",) and route.query == "how often are ferns watered?"
    assert router.route(unicodedata.normalize("NFC", "Café Opening Guide: when does it open?"), None).named == ("cafe",)
    assert router.route('The "North" Site Notes: where is the key?', None).named == ("quote",)


def test_a_statement_asked_for_by_company_comes_from_that_company(make_index, tmp_path):
    # issue 32: with several filings in a store, "What does Best Buy's balance sheet show?" put
    # another company's balance sheet first: label lookup took the document of the best hit,
    # here Amcor's, whose words match the question best.
    corpus = tmp_path / "filings"
    corpus.mkdir()
    report = "# Annual report\n\n## Business\n\nThe company sells {what}.\n\n## {statement}\n\n{body}\n"
    for name, what, statement, body in [
        ("AMCOR_2023_10K", "packaging", "Consolidated Balance Sheets",
         "What the balance sheet shows: the balance sheet shows total assets."),
        ("BESTBUY_2023_10K", "electronics", "Consolidated Statements of Financial Position",
         "Total assets were 15,803 million."),
        ("CVS_2022_10K", "pharmacy services", "Consolidated Balance Sheets", "Total assets were 228,275 million."),
        ("PEPSICO_2022_10K", "snacks", "Consolidated Balance Sheets", "Total assets were 92,187 million."),
    ]:
        (corpus / f"{name}.md").write_text(report.format(what=what, statement=statement, body=body))
    idx = make_index()
    assert not idx.ingest([corpus], show_progress=False).failed
    r = Retriever(idx)
    query = "What does Best Buy's balance sheet show?"
    assert r.ranker.route(query, None).prefer == ("BESTBUY_2023_10K",)
    first = r.retrieve(query, k=3)[0]
    assert (first.doc_id, first.title) == ("BESTBUY_2023_10K", "Consolidated Statements of Financial Position")
    # a word every filing's name has names none of them: the best hit's document answers
    assert r.ranker.route("What does the 10-K balance sheet show?", None).prefer == ()
    assert r.retrieve("What does the balance sheet show?", k=1)[0].doc_id == "AMCOR_2023_10K"


def test_in_a_store_too_small_to_route_the_company_named_still_holds_the_statement_lookup(make_index, tmp_path):
    # helper's finding: with 3 documents or fewer (no title routing), "What does Globex's balance
    # sheet show?" put Acme's balance sheet first although Globex's filing has none.
    corpus = tmp_path / "two"
    corpus.mkdir()
    (corpus / "ACME_2023_10K.md").write_text(
        "# Annual report\n\n## Consolidated Balance Sheets\n\nTotal assets were 1,200 million.\n")
    (corpus / "GLOBEX_2023_10K.md").write_text(
        "# Annual report\n\n## Business\n\nGlobex sells widgets.\n\n## Liquidity\n\n"
        "Globex's balance sheet is strong: it holds 300 million in cash and its debt fell.\n")
    idx = make_index()
    assert not idx.ingest([corpus], show_progress=False).failed
    r = Retriever(idx)
    query = "What does Globex's balance sheet show?"
    route = r.ranker.route(query, None)
    assert route.prefer == ("GLOBEX_2023_10K",) and not route.boost  # no routing, a preference
    assert r.ranker.rank(route, 20).labelled == ()  # Globex has no balance sheet: no label lead
    # the ranking is the one without label lookup: Acme's statement is not put first by its label
    off = make_index(ProxyPointerConfig(retrieval=RetrievalConfig(label_lookup=False)), store=idx.root)
    assert [(s.doc_id, s.node_id) for s in r.retrieve(query, k=3)] == [
        (s.doc_id, s.node_id) for s in Retriever(off).retrieve(query, k=3)]
    # a question that names no company keeps the best hit's document
    assert r.ranker.route("What does the balance sheet show?", None).prefer == ()
    assert r.retrieve("What does the balance sheet show?", k=1)[0].doc_id == "ACME_2023_10K"
