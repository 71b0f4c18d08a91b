"""Retrieval invariants over random small stores (fake embedder, real Chroma and registry).

``retrieve(k)`` returns ``min(k, sections in scope)`` distinct sections in every scoring mode
(dense or hybrid; max, sum or rrf; title routing; title field; label lookup; breadcrumb-only
sections demoted or not; nested keep or merge), with any allow-list, and each section's
``score`` is the cosine similarity of its chunk. Delivered sections never exceed the cap the
delivery policy promises (``retrieval.subtree_cap_tokens`` for a whole subtree, else
``own_text_tokens`` for the own text, plus an outline of the children that reaches the rest),
and their text is exactly the stored lines they cite.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from fakes import HashingEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sections import count_sections

from proxypointer.config import ProxyPointerConfig, RetrievalConfig
from proxypointer.index import Index
from proxypointer.retrieve.retriever import Retriever

WORDS = ("kettle", "descale", "vinegar", "toaster", "crumb", "fridge", "leave", "pay", "pump", "pressure",
         "buffer", "warranty", "returns", "notice", "period", "guide")

#: The pipeline before the reports round: dense, best chunk, no routing, title field, label
#: lookup, demotion or cap (configs/fast.yaml keeps labels, demotion and the cap).
BEFORE = {"hybrid": False, "section_scoring": "max", "title_routing_docs": 0, "title_weight": 0.0,
          "label_lookup": False, "demote_empty": False, "subtree_cap_tokens": 0}

#: Every scoring mode: ``{}`` is the default pipeline (hybrid, sum of 2, rrf_k 5, title field,
#: label lookup, demotion, cap; title routing needs more documents than the 3 of the default,
#: so ``title_routing_docs: 1`` turns it on in these stores of 1-3 documents).
MODES = (
    {},
    BEFORE,
    {"hybrid": False, "section_scoring": "max"},
    {"hybrid": False, "section_scoring": "sum", "section_top_n": 3},
    {"hybrid": False, "section_scoring": "rrf", "rrf_k": 60},
    {"hybrid": False, "section_scoring": "max", "title_routing_docs": 1},
    {"hybrid": True, **{k: v for k, v in BEFORE.items() if k != "hybrid"}},
    {"section_scoring": "max"},
    {"section_scoring": "rrf"},
    {"title_routing_docs": 1},
    {"title_routing_docs": 1, "title_routing_weight": 0.0},
    {"nested": "merge"},
    {"nested": "merge", "hybrid": False, "section_scoring": "max", "title_routing_docs": 1},
)

#: Modes the delivery property is checked in (the cap applies after ranking, whatever ranked).
DELIVERY_MODES = ({}, {"hybrid": False, "section_scoring": "max"}, {"section_scoring": "rrf", "title_routing_docs": 1},
                  {"nested": "merge"})

_words = st.lists(st.sampled_from(WORDS), min_size=0, max_size=12).map(" ".join)
#: Words and labels ("Note 3", "Box 1.2") so that label lookup has something to find.
_labels = st.sampled_from(["Note 3", "Box 1.2", "Item 7A", "Annex Table A2", "Chapter 2"])
_section = st.tuples(st.integers(2, 4), st.sampled_from(WORDS), _words)


@st.composite
def documents(draw: st.DrawFn, paragraphs: int = 1) -> str:
    """A markdown document: optional preamble, then headed sections (or no heading at all).

    Each section has up to ``paragraphs`` paragraphs of up to 12 words.
    """
    title = draw(st.sampled_from(WORDS)).title() + " " + draw(st.sampled_from(WORDS))
    lines = [f"# {title}", ""] if draw(st.booleans()) else []
    preamble = draw(_words)
    if preamble:
        lines += [preamble, ""]
    for level, word, body in draw(st.lists(_section, min_size=0, max_size=6)):
        label = f"{draw(_labels)} " if draw(st.booleans()) else ""
        more = draw(st.lists(_words.filter(bool), max_size=paragraphs - 1)) if body else []
        lines += [f"{'#' * level} {label}{word.title()}", ""] + [x for p in [body, *more] if p for x in (p, "")]
    text = "\n".join(lines).strip()
    return text or draw(_words.filter(bool))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    docs=st.lists(documents(), min_size=1, max_size=3),
    query=st.lists(st.sampled_from(WORDS) | _labels, min_size=1, max_size=4).map(" ".join),
    k=st.integers(1, 12),
    allow=st.sampled_from(["all", "none", "first"]),
)
def test_retrieve_returns_min_k_and_sections_in_every_mode(docs, query, k, allow):
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        for i, text in enumerate(docs):
            (corpus / f"doc{i}.md").write_text(text + "\n", encoding="utf-8")
        embedder = HashingEmbedder()
        with Index(Path(tmp) / "store", ProxyPointerConfig(), embedder) as idx:
            assert not idx.ingest([corpus], show_progress=False).failed
        doc_ids = {"all": None, "none": [], "first": ["doc0"]}[allow]
        for mode in MODES:
            cfg = ProxyPointerConfig(retrieval=RetrievalConfig(overfetch=1, **mode))
            with Index(Path(tmp) / "store", cfg, embedder) as idx:
                want = count_sections(idx.registry, mode.get("nested") == "merge", doc_ids)
                r = Retriever(idx)
                got = r.retrieve(query, k=k, doc_ids=doc_ids)
                assert len(got) == min(k, want), (mode, k, want)
                assert len({(s.doc_id, s.node_id) for s in got}) == len(got)
                assert doc_ids is None or {s.doc_id for s in got} <= set(doc_ids)
                if got:
                    found, vectors = idx.store.vectors([s.chunk_id for s in got])
                    # the query as searched: title routing may have taken a title out of it
                    q = embedder.encode_query(r.ranker.route(query, r.scope(doc_ids=doc_ids).where).query)
                    cosine = dict(zip(found, (vectors @ q).tolist(), strict=True))
                    assert all(abs(s.score - cosine[s.chunk_id]) < 1e-5 for s in got), mode


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    docs=st.lists(documents(paragraphs=6), min_size=1, max_size=3),
    query=st.lists(st.sampled_from(WORDS) | _labels, min_size=1, max_size=4).map(" ".join),
    cap=st.integers(0, 120),
    own=st.integers(1, 60),
    tail=st.integers(0, 60),
    full=st.integers(1, 3),
    budget=st.sampled_from([0, 0, 80, 400]),
)
def test_delivered_sections_never_exceed_the_cap(docs, query, cap, own, tail, full, budget):
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        texts = {}
        for i, text in enumerate(docs):
            texts[f"doc{i}"] = text + "\n"
            (corpus / f"doc{i}.md").write_text(text + "\n", encoding="utf-8")
        embedder = HashingEmbedder()
        with Index(Path(tmp) / "store", ProxyPointerConfig(), embedder) as idx:
            assert not idx.ingest([corpus], show_progress=False).failed
        tok = embedder.tokenizer
        for mode in DELIVERY_MODES:
            cfg = ProxyPointerConfig(retrieval=RetrievalConfig(
                subtree_cap_tokens=cap, own_text_tokens=own, tail_own_tokens=tail, full_ranks=full,
                delivery_budget_tokens=budget, **mode))
            with Index(Path(tmp) / "store", cfg, embedder) as idx:
                used = 0
                for rank, s in enumerate(Retriever(idx).retrieve(query, k=12), 1):
                    lines = texts[s.doc_id].split("\n")
                    n = sum(tok.count(x) for x in lines[s.text_start_line - 1 : s.text_end_line])
                    big = s.delivery == "subtree" and cap and tok.count(s.text) > cap
                    # a subtree over the cap only when it fit what the sections above left of the budget
                    assert not big or used + n <= budget, (mode, s.citation, used, n, budget)
                    # sections ranked after full_ranks deliver at most tail_own_tokens of own text
                    o = min(own, tail) if tail and rank > full else own
                    _check_delivery(s, lines, tok, 0 if big else cap, o, mode)
                    used += n


def _check_delivery(s, lines, tok, cap, own, mode):
    """The promise of retrieval.subtree_cap_tokens / own_text_tokens for one delivered section."""
    n = tok.count(s.text)
    if s.delivery == "subtree":
        assert cap == 0 or n <= cap, (mode, s.citation, n, cap)
        assert (s.text_start_line, s.text_end_line) == (s.start_line, s.end_line) and not s.outline
    else:  # own text (or a window of it) within own_text_tokens, plus the outline of the children
        assert cap > 0 and n <= own, (mode, s.citation, s.delivery, n, own)
    cut = lines[s.text_start_line - 1 : s.text_end_line]
    assert s.start_line <= s.text_start_line <= s.text_end_line <= s.end_line
    assert s.text == "\n".join(cut) or (s.delivery == "excerpt" and s.text_start_line == s.text_end_line
                                        and cut[0].startswith(s.text))
    assert s.citation == f"{s.doc_id}.md#L{s.text_start_line}-L{s.text_end_line}"
    after = s.text_end_line
    for e in s.outline:  # the children in order, each a heading inside the section, after its own text
        assert after < e.start_line <= e.end_line <= s.end_line, (mode, s.citation, e)
        assert lines[e.start_line - 1].startswith("#") and e.citation == f"{s.doc_id}.md#L{e.start_line}-L{e.end_line}"
        after = e.end_line
    if s.delivery == "own_text" and s.outline:
        # nothing of the section is out of reach: what the own text leaves out is in the outline
        assert not "".join(lines[s.text_end_line : s.outline[0].start_line - 1]).strip(), (mode, s.citation)
        assert s.outline[-1].end_line == s.end_line, (mode, s.citation)
