"""Cross-references: detection, label index, resolution, query lookup (no embedder needed)."""

from __future__ import annotations

import pytest

from proxypointer.lines import split_lines
from proxypointer.tree.build import build_tree
from proxypointer.tree.labels import mentions_label, statements_in_query
from proxypointer.tree.references import (
    Reference,
    detect_references,
    find_label_in_query,
    label_index,
    normalise_label,
    reference_graph,
    reference_graph_json,
    resolve,
)


def _doc(text: str):
    tree = build_tree(text, "doc")
    lines = split_lines(text)
    return tree, lines, label_index(tree, lines)


def _title(tree, node_id: str) -> str:
    return tree.node(node_id).title


def _refs(text: str) -> list[tuple[int, str, str, tuple[str, ...]]]:
    tree, lines, idx = _doc(text)
    return [
        (r.line, r.kind, r.label, tuple(_title(tree, t) for t in r.target_node_ids))
        for r in detect_references(tree, lines, idx)
    ]


REPORT = """\
# Annual report

## Overview
Revenue grew (see Note 14). Details are in Appendix G; the method is described in Annex 2.1.
The studies are listed in annex table A2.1.1 below, and Table 5.3 shows costs.
Refer to Section 2.4 and Chapter IV for more. Part II covers risk. See Box 3 and Exhibit 4.
Schedule 1 lists lenders. Item 7 is the MD&A. Figure 2 plots it.

## 2.4 Results
Numbers.

### Table 5.3: Costs by region
| region | cost |
|---|---|
| EU | 3 |

## Chapter IV Discussion
Text.

## PART II RISK
Risks.

## Notes to the accounts

### Note 14 — Debt
Term loans.

#### 14.2 Term loan
Drawn in full, see Appendix G.

## Item 7. Management's discussion
MD&A text.

## Appendix G: Statistical Tables
Tables.

## Annex 2.1 Methodology
Method.

### ANNEX TABLE A2.1.1 Studies included in the review
Studies.

## Boxes
Box 3: A worked example
Example text.

Exhibit 4 — Organisation chart
Chart.

**Figure 2.** Revenue over time

## Schedule 1
Lenders.
"""


def test_each_kind_and_numbering_style_resolves_to_its_heading_or_caption():
    got = {(kind, label): targets for _line, kind, label, targets in _refs(REPORT)}
    assert got[("note", "14")] == ("Note 14 — Debt",)
    assert got[("appendix", "G")] == ("Appendix G: Statistical Tables",)
    assert got[("annex", "2.1")] == ("Annex 2.1 Methodology",)
    assert got[("table", "A2.1.1")] == ("ANNEX TABLE A2.1.1 Studies included in the review",)
    assert got[("table", "5.3")] == ("Table 5.3: Costs by region",)
    assert got[("section", "2.4")] == ("2.4 Results",)  # numbered heading, no kind word
    assert got[("chapter", "IV")] == ("Chapter IV Discussion",)  # roman
    assert got[("part", "II")] == ("PART II RISK",)  # upper-case heading
    assert got[("box", "3")] == ("Boxes",)  # caption line in plain text -> its section
    assert got[("exhibit", "4")] == ("Boxes",)
    assert got[("figure", "2")] == ("Boxes",)  # bold caption
    assert got[("schedule", "1")] == ("Schedule 1",)
    assert got[("item", "7")] == ("Item 7. Management's discussion",)


def test_reference_fields_line_column_span_and_source_node():
    tree, lines, idx = _doc(REPORT)
    refs = detect_references(tree, lines, idx)
    note = next(r for r in refs if r.kind == "note")
    assert isinstance(note, Reference) and note.resolved
    assert (note.line, note.text) == (4, "Note 14")
    assert lines[note.line - 1][note.column :].startswith("Note 14")
    assert _title(tree, note.source_node_id) == "Overview"
    nested = [r for r in refs if _title(tree, r.source_node_id) == "14.2 Term loan"]
    assert [(r.kind, r.label) for r in nested] == [("appendix", "G")]


def test_headings_and_caption_labels_are_definitions_not_references():
    tree, lines, idx = _doc(REPORT)
    refs = detect_references(tree, lines, idx)
    ref_lines = {r.line for r in refs}
    for n in tree.nodes:
        assert n.start_line not in ref_lines
    caption = next(i for i, ln in enumerate(lines, 1) if ln.startswith("Box 3:"))
    assert caption not in ref_lines


@pytest.mark.parametrize(
    "text",
    [
        "We set the table for dinner and the table was full.\n",
        "Put it on the table in the hall; see table below.\n",
        "Note that this is important. Note the date.\n",
        "Item by item, part of the plan.\n",
        "A table A man sat at, a section I think was long.\n",
        "Part of the section is in the box.\n",
    ],
)
def test_ordinary_words_are_not_references(text):
    assert _refs("# Doc\n" + text) == []


def test_labels_that_exist_nowhere_stay_unresolved():
    text = (
        "# Doc\nSee Appendix Q and Table 9.9, as defined in Section 881(c)(3)(A).\n"
        "## Appendix G\nx\n"
    )
    got = _refs(text)
    assert [(k, lab, t) for _, k, lab, t in got] == [
        ("appendix", "Q", ()),
        ("table", "9.9", ()),
        ("section", "881", ()),
    ]


def test_table_label_does_not_fall_back_to_a_parent_number():
    text = "# Doc\nSee Table 5.3.\n## Table 5: All costs\nx\n"
    assert _refs(text)[0][3] == ()


def test_section_label_falls_back_to_parent_number():
    text = (
        "# Doc\nSee Section 2.19.1 and Section 2.13(d).\n## Section 2.19 Letters\nx\n"
        "## Section 2.13 Notes\ny\n"
    )
    assert [t for *_, t in _refs(text)] == [("Section 2.19 Letters",), ("Section 2.13 Notes",)]


def test_leading_zeros_and_roman_arabic_equivalence():
    text = (
        "# Doc\nUnder Section 2.4 and Article IV.\n## Section 2.04 Swing Line\nx\n"
        "## ARTICLE 4 CONDITIONS\ny\n"
    )
    assert [t for *_, t in _refs(text)] == [("Section 2.04 Swing Line",), ("ARTICLE 4 CONDITIONS",)]


def test_lists_and_ranges_give_one_reference_per_label():
    text = "# Doc\nSee Sections 2.04 and 2.05, Tables 1, 2 and 3.\n"
    got = [(k, lab) for _, k, lab, _t in _refs(text)]
    assert got == [
        ("section", "2.04"),
        ("section", "2.05"),
        ("table", "1"),
        ("table", "2"),
        ("table", "3"),
    ]


def test_lowercase_kind_needs_digit_or_cue():
    got = [
        (k, lab)
        for _, k, lab, _t in _refs("# Doc\nas shown in table 3, see appendix B; the part A\n")
    ]
    assert got == [("table", "3"), ("appendix", "B")]


def test_abbreviations_and_section_sign():
    got = [
        (k, lab)
        for _, k, lab, _t in _refs("# Doc\nIn Fig. 3 and § 2.1 and Sec. 4 (cf. Figs. 5 and 6).\n")
    ]
    assert got == [
        ("figure", "3"),
        ("section", "2.1"),
        ("section", "4"),
        ("figure", "5"),
        ("figure", "6"),
    ]


def test_quoted_section_title_resolves_by_title():
    text = (
        '# Paper\n## Intro\nThe experiments in Section "Experiments and results" use it.\n'
        '## Experiments and Results\nx\n'
    )
    assert _refs(text) == [(3, "section", "Experiments and results", ("Experiments and Results",))]


def test_placeholder_labels_are_detected_but_unresolved():
    # QASPER's renderer replaced numbers with placeholders: references, but nothing to resolve.
    got = _refs("# Paper\nTable TABREF33 gives results (see section SECREF31).\n")
    assert [(k, lab, t) for _, k, lab, t in got] == [
        ("table", "TABREF33", ()),
        ("section", "SECREF31", ()),
    ]


def test_fenced_code_is_not_scanned():
    assert _refs("# Doc\n```\nsee Table 1\n```\n") == []


def test_ambiguous_numbered_headings_prefer_the_kind_parent():
    text = (
        "# Report\n## 14. Outlook\nx\nSee Note 14.\n## Notes to the financial statements\n"
        "### 14. Debt\ny\n"
    )
    assert [t for *_, t in _refs(text)] == [("14. Debt",)]


def test_letter_heading_needs_an_appendix_parent():
    text = "# Doc\nSee Appendix B.\n## B. Budget\nx\n"
    assert _refs(text)[0][3] == ()
    text = "# Doc\nSee Appendix B.\n## Appendices\n### B. Budget\nx\n"
    assert _refs(text)[0][3] == ("B. Budget",)


def test_graph_excludes_self_references_and_dedupes():
    text = (
        "# Doc\n## Section 1 Scope\nThis Section 1 and Section 2, Section 2 again.\n"
        "## Section 2 Terms\nx\n"
    )
    tree, lines, idx = _doc(text)
    refs = detect_references(tree, lines, idx)
    graph = reference_graph(refs)
    (src,) = graph
    assert _title(tree, src) == "Section 1 Scope"
    assert [_title(tree, t) for t in graph[src]] == ["Section 2 Terms"]
    assert reference_graph_json(refs) == {src: f'["{graph[src][0]}"]'}


def test_normalise_label():
    assert normalise_label("2.04") == "2.4"
    assert normalise_label("a2.1.1") == "A2.1.1"
    assert normalise_label("A-1") == "A.1"
    assert normalise_label("14.") == "14"


def test_resolve_directly():
    tree, _lines, idx = _doc(REPORT)
    assert [_title(tree, t) for t in resolve("note", "14", idx)] == ["Note 14 — Debt"]
    assert resolve("note", "15", idx) == ()


@pytest.mark.parametrize(
    "query, title",
    [
        ("what does annex table A2.1.1 say", "ANNEX TABLE A2.1.1 Studies included in the review"),
        ("summarise Note 14", "Note 14 — Debt"),
        ("summarise note 14", "Note 14 — Debt"),
        ("what is in appendix g?", "Appendix G: Statistical Tables"),
        ("table 5.3 costs", "Table 5.3: Costs by region"),
    ],
)
def test_find_label_in_query(query, title):
    tree, _lines, idx = _doc(REPORT)
    assert [_title(tree, t) for t in find_label_in_query(query, idx)] == [title]


@pytest.mark.parametrize(
    "query", ["what is on the table", "summarise the notes", "appendix", "note 99"]
)
def test_find_label_in_query_without_a_label(query):
    _tree, _lines, idx = _doc(REPORT)
    assert find_label_in_query(query, idx) == ()


def test_credit_agreement_references_resolve(shared_dir):
    from proxypointer.read.readers import read_document

    path = shared_dir / "bench" / "long_docs" / "credit_agreements" / "Emerson.md"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    text = read_document(path)
    tree, lines = build_tree(text, "Emerson"), split_lines(text)
    refs = detect_references(tree, lines)
    s204 = [r for r in refs if r.kind == "section" and normalise_label(r.label) == "2.4"]
    assert s204 and all(
        tree.node(r.target_node_ids[0]).title.startswith("Section 2.04") for r in s204
    )
    tax = [r for r in refs if r.kind == "section" and r.label == "881"]
    assert tax and not any(r.resolved for r in tax)  # Internal Revenue Code, not this document


# -- retrieval --------------------------------------------------------------------------------

LOANS = """\
# Loan report

## Note 14 Debt

### 14.2 Term loan
The term loan of the kettle factory is repaid in instalments, see Appendix G.

## Note 15 Leases
Lease of the warehouse for bicycles.

## Appendix G
Repayment schedule: 2027 10; 2028 20; 2029 30.
"""


@pytest.fixture
def loans(make_index, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "loans.md").write_text(LOANS)
    idx = make_index()
    assert idx.ingest([corpus], show_progress=False).indexed == 1
    return idx


def test_retrieve_with_references_adds_the_cited_section_marked_reached_via(loans):
    from proxypointer.retrieve.references import ReferenceFollower
    from proxypointer.retrieve.retriever import Retriever

    got = ReferenceFollower(Retriever(loans)).retrieve("kettle factory term loan instalments", k=1)
    assert [(s.title, s.reached_via) for s in got] == [
        ("14.2 Term loan", ""),
        ("Appendix G", "Loan report > Note 14 Debt > 14.2 Term loan (L5-L7)"),
    ]
    app = got[1]
    assert (app.start_line, app.end_line) == (11, 12)
    assert app.text == "## Appendix G\nRepayment schedule: 2027 10; 2028 20; 2029 30."
    assert app.citation == "loans.md#L11-L12" and app.breadcrumb == ("Loan report", "Appendix G")
    assert app.score == got[0].score and app.rank_score == got[0].rank_score and app.chunk_id == ""


def test_add_references_respects_the_budget_and_never_repeats_a_section(loans):
    from proxypointer.retrieve.references import ReferenceFollower
    from proxypointer.retrieve.retriever import Retriever

    r = Retriever(loans)
    f = ReferenceFollower(r)
    top = r.retrieve("kettle factory term loan instalments", k=1)
    tight = f.add_references(top, budget_tokens=r.index.embedder.tokenizer.count(top[0].text))
    assert tight == top
    both = r.retrieve("kettle factory term loan appendix g repayment schedule", k=2)
    assert {s.title for s in both} == {"14.2 Term loan", "Appendix G"}
    assert f.add_references(both) == both  # the target is already there


def test_query_label_goes_straight_to_the_section(loans):
    from proxypointer.retrieve.references import ReferenceFollower
    from proxypointer.retrieve.retriever import Retriever

    got = ReferenceFollower(Retriever(loans)).retrieve("summarise note 15", k=2, max_references=0)
    assert got[0].title == "Note 15 Leases" and got[0].reached_via == "query"
    assert len(got) == 2 and len({s.node_id for s in got}) == 2


def test_follow_references_after_assemble_adds_whole_blocks(loans):
    from proxypointer.retrieve.context import Assembler
    from proxypointer.retrieve.references import ReferenceFollower
    from proxypointer.retrieve.retriever import Retriever

    r = Retriever(loans)
    blocks = Assembler(r).assemble("kettle factory term loan instalments", budget_tokens=27)
    assert [b.section.title for b in blocks] == ["14.2 Term loan"]
    out = ReferenceFollower(r).add_to_blocks(blocks, budget_tokens=200)
    added = out[len(blocks) :]
    assert [b.section.title for b in added] == ["Appendix G"]
    assert added[0].text == added[0].section.text and added[0].whole and added[0].tokens > 0
    assert sum(b.tokens for b in out) <= 200
    assert ReferenceFollower(r).add_to_blocks(blocks, budget_tokens=30) == blocks  # no room left


def test_hyphenated_labels_and_html_captions():
    text = (
        "# Ch 15\n## Cycles\nSee the diagram in Figure 15-4 and Table B-7.\n"
        '## Drawing\n<span class="caption">Figure 15-4: A reference cycle</span>\n'
        "## Symbols\nTable B-7: Comments\n"
    )
    assert [(k, lab, t) for _, k, lab, t in _refs(text)] == [
        ("figure", "15-4", ("Drawing",)),
        ("table", "B-7", ("Symbols",)),
    ]


def test_a_caption_in_the_contents_loses_to_the_caption_in_the_body():
    text = (
        "Contents\nExhibit D: Form of note\n# Terms\nIn the form of Exhibit D.\n# Forms\n"
        "Exhibit D: Form of note\n"
    )
    assert _refs(text) == [(4, "exhibit", "D", ("Forms",))]


def test_unnumbered_label_does_not_hit_a_numbered_heading_where_headings_name_their_kind():
    # Credit agreements: "ARTICLE 3" headings exist, so "Section 3(3) of ERISA" is not "III. Fees".
    text = (
        "# ARTICLE 3 TAXES\nAs defined in Section 3(3) of ERISA and Article III.\n## III. Fees\nx\n"
    )
    assert [t for *_, t in _refs(text)] == [(), ("ARTICLE 3 TAXES",)]
    text = "# Paper\nIn Section 3 we test.\n## 1 Introduction\na\n## 3 Experiments\nb\n"
    assert [t for *_, t in _refs(text)] == [("3 Experiments",)]


def test_lowercase_letter_label_after_a_bare_preposition_is_prose():
    assert _refs("# Doc\nWe take an order from table A, then an order from table B.\n") == []


def test_interleave_puts_the_referenced_section_after_its_citer(loans):
    from proxypointer.retrieve.references import ReferenceFollower
    from proxypointer.retrieve.retriever import Retriever

    r = Retriever(loans)
    f = ReferenceFollower(r)
    top = r.retrieve("kettle factory term loan instalments bicycles warehouse", k=2)
    assert top[0].title == "14.2 Term loan"
    inter = f.add_references(top, interleave=True)
    assert [s.title for s in inter] == ["14.2 Term loan", "Appendix G", top[1].title]
    assert [s.title for s in f.add_references(top)] == [
        "14.2 Term loan",
        top[1].title,
        "Appendix G",
    ]


def test_roadmap_lines_are_not_followed():
    from proxypointer.tree.references import DocumentReferences

    text = (
        "# Paper\n## Intro\n"
        'Section "Data" covers data, Section "Model" the model, Section "Results" results.\n'
        'The model is in Section "Model".\n'
        "## Data\na\n## Model\nb\n## Results\nc\n"
    )
    refs = DocumentReferences.build(text, "paper")
    intro = refs.tree.nodes[1]
    got = [(r.line, n.title) for r, n in refs.targets(intro.start_line, intro.end_line)]
    assert got == [(4, "Model")]
    assert len(refs.targets(intro.start_line, intro.end_line, roadmap_targets=0)) == 3


def test_contents_are_not_followed_and_focus_orders_targets():
    from proxypointer.tree.references import DocumentReferences

    text = (
        "Contents\nSection 1 Scope\nSection 2 Terms\n"
        "# Section 1 Scope\nSee Section 3.\n\nlong text\n\nSee Section 2.\n"
        "# Section 2 Terms\nx\n# Section 3 Fees\ny\n"
    )
    refs = DocumentReferences.build(text, "d")
    assert [n.title for _, n in refs.targets(1, 3)] == []  # the preamble lists contents
    scope = refs.tree.node(refs.labels.headings[("section", "1")][0])
    span = (scope.start_line, scope.end_line)
    assert [n.title for _, n in refs.targets(*span)] == ["Section 3 Fees", "Section 2 Terms"]
    got = refs.targets(*span, focus=(9, 9))
    assert [n.title for _, n in got] == ["Section 2 Terms", "Section 3 Fees"]


# -- financial statements named in a question -----------------------------------------------------
FILING_10K = """# ACME 10-K

## Table of Contents

### Consolidated Balance Sheets

### Consolidated Statements of Cash Flows

## Item 6. Selected Financial Data

### Consolidated Balance Sheets:

Total assets 10 20 30

## Item 7. Management's Discussion

### Off-Balance Sheet Arrangements

None.

## Item 8. Financial Statements

### ACME, Inc. Consolidated Statements of Operations (in millions)

Revenues 1 2 3

### Consolidated Statements of Comprehensive Income

Net income 1 2 3

### Consolidated Balance Sheets (in millions)

Total current assets 1 2

### Consolidated Statements of Cash Flows

Cash provided by operations 1 2
"""


@pytest.mark.parametrize(
    "query, kinds",
    [
        ("Using the balance sheet and the P&L statement, what is the asset turnover?", ("balance_sheet", "income")),
        ("from the statement of financial position and the income statement", ("balance_sheet", "income")),
        ("based on the statement of income and the statement of cash flows", ("income", "cash_flows")),
        ("what does the statement of comprehensive income show", ("comprehensive_income",)),
        ("the cash flow statement", ("cash_flows",)),
        ("statement of changes in stockholders' equity", ("equity",)),
        ("What are its off-balance sheet arrangements?", ()),
        ("off–balance sheet arrangements", ()),
        ("items kept off the balance sheet", ()),
        ("What was net income?", ()),
    ],
)
def test_statements_in_query(query, kinds):
    assert statements_in_query(query) == kinds


def test_a_statement_named_in_a_query_resolves_to_its_heading():
    tree, _lines, idx = _doc(FILING_10K)
    got = find_label_in_query("Basing your judgment on the balance sheet and the P&L, what is ROA?", idx)
    # the statement itself, not its line in the contents, the selected-data row label ("...:")
    # nor an off-balance-sheet heading
    assert [_title(tree, t) for t in got] == [
        "Consolidated Balance Sheets (in millions)", "ACME, Inc. Consolidated Statements of Operations (in millions)"]
    assert mentions_label("what is in the cash flow statement")
    assert [_title(tree, t) for t in find_label_in_query("what is in the cash flow statement", idx)] == [
        "Consolidated Statements of Cash Flows"]
    # a statement the document does not have names nothing
    assert find_label_in_query("the statement of shareholders' equity", idx) == ()


EARNINGS_RELEASE = """# ULTRA Corp. Announces Fourth Quarter Results

## Balance Sheet

Cash and cash equivalents at the end of the quarter were $737.9 million. Merchandise
inventories, net at the end of the quarter totaled $1.6 billion compared to $1.5 billion
at the end of the prior year quarter, an increase that reflects new stores and the
investments the company made in its supply chain over the year.

## Share Repurchase Program

The company bought back 1.4 million shares for $582.9 million during the quarter.

## Condensed Consolidated Balance Sheets

| (In thousands) | January 28, 2023 | January 29, 2022 |
|---|---|---|
| Cash and cash equivalents | $ 737,877 | $ 431,611 |
| Merchandise inventories, net | 1,603,950 | 1,499,218 |
| Total current assets | 2,530,163 | 2,118,941 |
| Total assets | 5,570,191 | 5,143,981 |
"""


def test_a_statement_is_its_rows_of_figures_not_an_earlier_paragraph_titled_like_it():
    # An earnings release discusses its "Balance Sheet" in a paragraph before the condensed
    # statement: a question about the balance sheet wants the statement.
    tree, _lines, idx = _doc(EARNINGS_RELEASE)
    got = find_label_in_query("What does the balance sheet show about inventories?", idx)
    assert [_title(tree, t) for t in got] == ["Condensed Consolidated Balance Sheets"]
    # with no statement of figures, the paragraph is still the one titled so
    prose_only = EARNINGS_RELEASE.split("## Condensed")[0]
    tree, _lines, idx = _doc(prose_only)
    assert [_title(tree, t) for t in find_label_in_query("What does the balance sheet show?", idx)] == [
        "Balance Sheet"]


WORDY_TABLE = """
| (In thousands, except share data) | January 28, 2023 | January 29, 2022 |
|---|---|---|
| Cash and cash equivalents held at banks and in money market funds | $ 737,877 | $ 431,611 |
| Merchandise inventories, net of reserves for shrink and obsolescence | 1,603,950 | 1,499,218 |
| Prepaid expenses and other current assets not classified elsewhere | 140,936 | 132,762 |
| Total current assets of the company at the end of the fiscal year | 2,530,163 | 2,118,941 |
| Property and equipment, net of accumulated depreciation | 1,009,006 | 933,458 |
| Total assets of the company at the end of the fiscal year | 5,570,191 | 5,143,981 |
"""


@pytest.mark.parametrize(
    "statement",
    [
        # a pipe table with long row labels (pipes are not words)
        "## Condensed Consolidated Balance Sheets\n" + WORDY_TABLE,
        # a long introduction without figures before the rows
        "## Condensed Consolidated Balance Sheets\n\n" + "The following table is unaudited and condensed. " * 12
        + "\n" + WORDY_TABLE,
        # the rows under a child heading
        "## Condensed Consolidated Balance Sheets\n\n### Assets\n" + WORDY_TABLE,
    ],
)
def test_a_statements_rows_are_found_whatever_their_labels_intro_or_subheadings(statement):
    release = EARNINGS_RELEASE.split("## Condensed")[0] + statement
    tree, _lines, idx = _doc(release)
    got = find_label_in_query("What does the balance sheet show?", idx)
    assert [_title(tree, t) for t in got] == ["Condensed Consolidated Balance Sheets"]
