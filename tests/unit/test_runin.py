"""Titles run into the end of a paragraph by a converter are put on a line of their own."""

from __future__ import annotations

from proxypointer.config import TreeConfig
from proxypointer.runin import split_run_in_titles
from proxypointer.tree import build_tree

CVS = ("The Company's total guaranty fund assessments liability was immaterial at both December 31, 2022 and "
       "2021. Litigation and Regulatory Proceedings")


def test_a_title_after_the_last_sentence_gets_its_own_line():
    lines, n = split_run_in_titles(["<!-- page 172 -->", "", CVS, "", "The Company has been involved in suits."])
    assert n == 1
    assert lines == [
        "<!-- page 172 -->", "",
        "The Company's total guaranty fund assessments liability was immaterial at both December 31, 2022 and 2021.",
        "", "Litigation and Regulatory Proceedings",
        "", "The Company has been involved in suits.",
    ]


def test_what_is_not_a_title_run_into_a_paragraph_is_left_alone():
    kept = [
        "We sold the business to Acme Holdings Inc. Corporation New Jersey",  # after an abbreviation
        "Net sales rose 4%. Operating income fell as costs of freight rose sharply in the year",  # a sentence
        "See Item 7. Management's Discussion",  # too little before the title
        "## The year in review. Results of Operations",  # a heading already
        "- We expanded our stores in the region. Store Openings",  # a list item
        "| Revenue grew strongly in the year. | Total Revenue |",  # a table row
        "Revenue grew strongly in every region this year. total revenue",  # lower case: no title
        "Revenue grew strongly in every region this year.",  # nothing after the sentence
    ]
    assert split_run_in_titles(kept) == (kept, 0)
    fenced = ["```", "We print the report for every region here. Results of Operations", "```"]
    assert split_run_in_titles(fenced) == (fenced, 0)


def test_the_title_becomes_a_section_of_a_converted_document():
    text = "\n".join([
        "<!-- page 1 -->", "", "# Item 8. Financial Statements", "",
        CVS, "", "The Company is a defendant in lawsuits about drug prices.", "",
    ])
    tree = build_tree("\n".join(split_run_in_titles(text.split("\n"))[0]), "cvs", TreeConfig())
    titles = [n.title for n in tree.nodes if n.kind == "heading"]
    assert "Litigation and Regulatory Proceedings" in titles
    # without the split the title is part of a paragraph and the tree has no section for it
    assert "Litigation and Regulatory Proceedings" not in [
        n.title for n in build_tree(text, "cvs", TreeConfig()).nodes]
