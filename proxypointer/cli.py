"""Command line: ``proxypointer ingest | query | ask | tree | status | delete | check | eval | convert | serve``.

A thin front end over the public API and the only module that prints. Exit codes: 0 ok,
1 a ProxyPointerError or a file that failed (one line on stderr; traceback with ``-v``),
2 usage.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ._version import __version__
from .chunk.datauri import replace_data_uris
from .errors import ProxyPointerError
from .storefiles import CONVERTED_DIR, ENCODERS_DIR, is_store

__all__ = ["main"]

logger = logging.getLogger("proxypointer")


def _add_store_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", metavar="DIR", help="store folder (default: store.path of the config, .proxypointer)")
    p.add_argument("--config", metavar="FILE", help="YAML config (default: built-in defaults = configs/default.yaml)")


def _add_tree_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("heading modes")
    g.add_argument(
        "--converter-output",
        choices=("auto", "on", "off"),
        help="which documents get the converter rules (drop row-like headings, title lines as headings, levels "
        "from numbering): auto (default) = those with page markers, page footers or row-like headings",
    )
    g.add_argument("--bold-headings", action="store_true", help="treat lines that are one **bold** span as headings")
    g.add_argument("--numbered-headings", action="store_true", help="treat plain lines like '2.3 Results' as headings")
    g.add_argument("--html-headings", action="store_true", help="treat <h1>..<h6> lines as headings")
    g.add_argument(
        "--relevel-numbered", action="store_true", help="take levels from numbering when all headings share one level"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="proxypointer",
        description="Proxy-Pointer RAG: index markdown by its heading tree, retrieve whole sections with citations.",
    )
    parser.add_argument("--version", action="version", version=f"proxypointer {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logs (others: info), tracebacks")
    parser.add_argument("-q", "--quiet", action="store_true", help="errors only; no progress bar")
    # --store/--config: before the command too (`proxypointer --store s query ...`); given after
    # it as well, the later one wins. A command without them refuses them (`_global_options`).
    parser.add_argument("--store", metavar="DIR", default=None, help="store folder (commands that use one)")
    parser.add_argument("--config", metavar="FILE", default=None, help="YAML config (commands that read one)")
    # -v/-q are also accepted after the command (`proxypointer ingest data/ -q`).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _add_ingest_parser(sub, common)
    _add_query_parser(sub, common)
    _add_ask_parser(sub, common)
    _add_tree_parser(sub, common)
    _add_maintenance_parser(sub, common)
    _add_eval_parser(sub, common)
    _add_serve_parser(sub, common)
    _add_convert_parser(sub, common)
    _global_options(parser)
    return parser


def _add_ingest_parser(sub, common: argparse.ArgumentParser) -> None:  # noqa: ANN001 - argparse's private type
    """Add the ``ingest`` command."""
    p = sub.add_parser("ingest", parents=[common],
                       help="index markdown, PDF, Word, HTML and PowerPoint files or folders (incremental sync)")
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="markdown, PDF, Word, HTML or PowerPoint files or folders (recursive *.md, *.markdown; "
        "*.pdf with the pdf extra; *.docx, *.html, *.htm, *.pptx with the office extra)",
    )
    p.add_argument(
        "--prune",
        action="store_true",
        help="delete documents whose files are gone from the given folders, and cached embeddings no chunk uses",
    )
    p.add_argument(
        "--include-hidden",
        action="store_true",
        help="also read hidden folders and files (.git, .obsidian, any .name) and tool folders (node_modules, ...)",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--engine",
        choices=["local", "ray"],
        default="local",
        help="local: this process (default); ray: Ray Data workers writing to a Chroma server "
        "(needs store.mode: http and the ray extra; docs/scaling.md)",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="with --engine ray: the Ray cluster to join (auto, HOST:6379); default: start a local one",
    )
    _add_store_args(p)
    _add_tree_flags(p)


def _add_query_parser(sub, common: argparse.ArgumentParser) -> None:  # noqa: ANN001 - argparse's private type
    """Add the ``query`` command."""
    p = sub.add_parser("query", parents=[common], help="retrieve the best whole sections for a question")
    p.add_argument("question", help="question or keywords")
    p.add_argument("-k", type=int, default=None, help="number of sections (default: retrieval.k, 5)")
    p.add_argument("--doc", action="append", metavar="DOC_ID", help="search only this document (repeatable)")
    p.add_argument("--prefix", metavar="PREFIX", help="search only documents whose doc_id starts with PREFIX")
    p.add_argument("--json", action="store_true", help="print a JSON list of sections")
    p.add_argument(
        "--refs",
        action="store_true",
        help="also add the sections they cite ('see Appendix G') (default: retrieval.follow_references; "
        "labels named in the question, 'Note 14', are looked up either way: retrieval.label_lookup)",
    )
    _add_store_args(p)


def _add_ask_parser(sub, common: argparse.ArgumentParser) -> None:  # noqa: ANN001 - argparse's private type
    """Add the ``ask`` command."""
    p = sub.add_parser(
        "ask", parents=[common], help="answer a question from the best sections, with citations (needs an llm: config)"
    )
    p.add_argument("question", help="the question")
    p.add_argument("-k", type=int, default=None, help="number of sections shown to the model (default: retrieval.k, 5)")
    p.add_argument(
        "--session",
        metavar="NAME",
        help="keep a conversation: follow-ups use earlier turns (stored in the store folder)",
    )
    p.add_argument("--doc", action="append", metavar="DOC_ID", help="search only this document (repeatable)")
    p.add_argument("--prefix", metavar="PREFIX", help="search only documents whose doc_id starts with PREFIX")
    p.add_argument("--json", action="store_true", help="print the answer (or, without an LLM, the context) as JSON")
    _add_store_args(p)


def _add_tree_parser(sub, common: argparse.ArgumentParser) -> None:  # noqa: ANN001 - argparse's private type
    """Add the ``tree`` command."""
    p = sub.add_parser(
        "tree", parents=[common],
        help="show the skeleton tree of markdown, PDF, Word, HTML or PowerPoint files (with pages or slides if any)"
    )
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="markdown files, or PDFs (converted, or read from the conversions that the store at "
                        "store.path keeps; needs the pdf extra)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="the project's JSON tree")
    fmt.add_argument("--format", choices=["outline", "json", "pageindex"], default=None, help="output format")
    p.add_argument(
        "--check", action="store_true", help="report trees that look wrong before indexing (exit 1 on a warning)"
    )
    p.add_argument(
        "--refs",
        action="store_true",
        help="list cross-references ('see Note 14'): line, label, resolved target or 'unresolved'",
    )
    p.add_argument(
        "--gold",
        metavar="OUTLINE",
        help="score the tree against a gold outline: a YAML/JSON file (titles, 1-based PDF pages, children) "
        "or 'bookmarks' (the PDF's own; read the PDF with --config setting pdf.bookmarks: false to score "
        "the tree it would have without them): recall, nesting, unsupported headings",
    )
    p.add_argument("--config", metavar="FILE", help="YAML config")
    _add_tree_flags(p)


def _add_maintenance_parser(sub, common: argparse.ArgumentParser) -> None:  # noqa: ANN001 - argparse's private type
    """Add the ``status``, ``delete`` and ``check`` commands."""
    p = sub.add_parser("status", parents=[common], help="documents, sections, chunks, model, store, stale sources")
    p.add_argument("--json", action="store_true")
    p.add_argument("--docs", action="store_true", help="also list each document: doc_id, sections, chunks, source")
    _add_store_args(p)

    p = sub.add_parser("delete", parents=[common], help="remove documents from the index")
    p.add_argument("doc_ids", nargs="+", metavar="DOC_ID", help="doc_id, or its citation form (handbook.md)")
    _add_store_args(p)

    p = sub.add_parser("check", parents=[common], help="verify registry, stored sources and Chroma against each other")
    p.add_argument("--repair", action="store_true", help="remove stray chunks and finish interrupted runs")
    p.add_argument("--json", action="store_true")
    _add_store_args(p)


def _add_convert_parser(sub, common: argparse.ArgumentParser) -> None:  # noqa: ANN001 - argparse's private type
    p = sub.add_parser(
        "convert",
        parents=[common],
        help="convert PDFs (a page marker per page; the pdf extra), Word, HTML and PowerPoint files "
        "(a marker per slide; the office extra) to the markdown that ingest indexes, for inspection",
    )
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="files or folders (recursive *.pdf, *.docx, *.html, *.htm, *.pptx)")
    p.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="output .md file (one PDF) or folder (keeps the layout of given folders); default: beside each PDF",
    )
    p.add_argument(
        "--workers", type=int, metavar="N", help="converter processes at once, one JVM each (default: pdf.workers)"
    )
    p.add_argument("--config", metavar="FILE", help="YAML config (its pdf: section)")


def _add_eval_parser(sub, common: argparse.ArgumentParser) -> None:  # noqa: ANN001 - argparse's private type
    p = sub.add_parser(
        "eval", parents=[common], help="measure retrieval quality on a benchmark folder (docs/evaluation.md)"
    )
    p.add_argument(
        "--benchmark",
        default="bench/tiny",
        metavar="DIR",
        help="folder with docs/*.md (or docs/*.pdf with evidence_pages gold) and questions.jsonl "
        "(default: bench/tiny, the 14-question set shipped in the repository, run from its root)",
    )
    p.add_argument("--config", metavar="FILE", help="YAML config of the proxypointer system (default: built-in)")
    p.add_argument(
        "--scope",
        action="append",
        choices=["doc", "corpus"],
        help="doc: search the question's document only; corpus: all (repeatable; default both)",
    )
    p.add_argument(
        "--query-template",
        metavar="TEMPLATE",
        help="query for every scope, with {question} and {title} (default: '{question}' for doc, "
        "'{title}. {question}' for corpus)",
    )
    p.add_argument(
        "--k",
        type=int,
        default=5,
        help="extra cut-off 1..10: adds hit@k, recall@k, tokens@k (hit@1/3/5, MRR@10 always)",
    )
    p.add_argument(
        "--budgets",
        default="500,1000,2000,4000",
        metavar="B,B",
        help="context budgets in word pieces of the model's tokenizer (default 500,1000,2000,4000)",
    )
    p.add_argument("--limit-docs", type=int, default=0, metavar="N", help="first N documents only (0: all)")
    p.add_argument(
        "--systems",
        default=",".join(("proxypointer", "flat", "flat-title", "sections-no-breadcrumb", "bm25-sections")),
        help="comma-separated systems (default: all five): proxypointer (the configured pipeline), "
        "flat (sliding windows, dense), flat-title (windows with the document title), "
        "sections-no-breadcrumb (sections, dense), bm25-sections (sections, BM25); "
        "for documents with pages also pages, bm25-pages",
    )
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="bootstrap samples for 95%% intervals")
    p.add_argument("--cache", default=".proxypointer/eval-cache", metavar="DIR", help="folder of per-system stores")
    p.add_argument("--json", metavar="OUT", help="write results as JSON (and OUT's .md and .png beside it)")
    p.add_argument("--plot", metavar="PNG", help="write the budget plot here")


def _add_serve_parser(sub, common: argparse.ArgumentParser) -> None:  # noqa: ANN001 - argparse's private type
    p = sub.add_parser(
        "serve", parents=[common], help="serve the index to agents (MCP) and apps (HTTP API); docs/integrations.md"
    )
    kinds = p.add_subparsers(dest="serve_kind", required=True, metavar="KIND")
    for kind, text in (
        ("mcp", "MCP server (tools search, list_documents, get_structure, get_section); stdio by default"),
        ("http", "REST API (POST /query, GET /documents, ...; OpenAPI at /docs)"),
    ):
        k = kinds.add_parser(kind, parents=[common], help=text, description=text)
        if kind == "mcp":
            k.add_argument("--http", action="store_true", help="streamable HTTP at HOST:PORT/mcp instead of stdio")
        k.add_argument("--host", help="address to bind (default: serve.host, 127.0.0.1; others need a bearer token)")
        default_port = "serve.mcp_port, 8766" if kind == "mcp" else "serve.port, 8765"
        k.add_argument("--port", type=int, help=f"TCP port (default: {default_port})")
        if kind == "http":
            k.add_argument(
                "--allow-write",
                action="store_true",
                help="accept POST /ingest (files under serve.ingest_roots) and DELETE /documents/{doc_id}",
            )
        _add_store_args(k)


def _global_options(parser: argparse.ArgumentParser) -> None:
    """Let each command's ``--store``/``--config`` keep a value given before the command.

    Argparse writes a subcommand's defaults over the main parser's values; with the
    subcommands' defaults suppressed, ``--store`` before the command stays unless the command
    line gives it again after. Records which (sub)commands take each option, so that ``main``
    refuses one given before a command that has no use for it.
    """
    takes: dict[str, set[str]] = {"store": set(), "config": set()}

    def walk(p: argparse.ArgumentParser, path: str) -> None:
        for action in p._actions:  # noqa: SLF001 - argparse has no public walk of its parsers
            if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
                for name, child in action.choices.items():
                    walk(child, f"{path} {name}".strip())
            elif path and action.dest in takes:
                action.default = argparse.SUPPRESS
                takes[action.dest].add(path)

    walk(parser, "")
    parser.set_defaults(_takes=takes)


def _config(args: argparse.Namespace):
    import dataclasses

    from .config import load_config

    cfg = load_config(getattr(args, "config", None))
    flags = {
        "bold_headings": getattr(args, "bold_headings", False),
        "numbered_headings": getattr(args, "numbered_headings", False),
        "html_headings": getattr(args, "html_headings", False),
        "relevel_numbered": getattr(args, "relevel_numbered", False),
    }
    on: dict[str, object] = {k: True for k, v in flags.items() if v}
    if getattr(args, "converter_output", None):
        on["converter_output"] = args.converter_output
    if on:
        cfg = dataclasses.replace(cfg, tree=dataclasses.replace(cfg.tree, **on))
    return cfg


def _index(args: argparse.Namespace, *, one_query: bool = False):
    """Open the index named by ``--store`` and ``--config``.

    ``one_query``: the process embeds a single query, so the embedder does not build its
    traced query encoder (~1 s that only pays back over many queries).
    """
    from .index import Index

    config = _config(args)
    if not one_query:
        return Index(args.store, config)
    from .embed.make import make_embedder

    root = Path(args.store if args.store is not None else config.store.path)
    embedder = make_embedder(config.embedding, trace_query=False, encoder_dir=root / ENCODERS_DIR)
    return Index(args.store, config, embedder)


def _open_index(args: argparse.Namespace):
    """Open the existing store named by ``--store`` (StoreNotFoundError if there is none)."""
    from .index import Index

    return Index.open(args.store, _config(args))


def _cmd_ingest(args: argparse.Namespace) -> int:
    if args.ray_address and args.engine != "ray":
        print("error: --ray-address: only with --engine ray", file=sys.stderr)
        return 2
    if args.engine != "ray" and args.paths and not any(os.path.lexists(p) for p in args.paths):
        # nothing to read: say so before a store is opened, so that no empty store is left behind
        # (--engine ray checks its store first: an embedded one is refused before anything)
        from .docids import escaped

        for p in args.paths:
            print(f"error: {escaped(str(p))}: no such file or folder; check the path", file=sys.stderr)
        return 1
    index = _index(args)
    if args.engine == "ray":
        from .ingest.ray import ray_ingest  # Ray itself loads only now

        report = ray_ingest(
            index,
            args.paths,
            address=args.ray_address,
            prune=args.prune,
            include_hidden=args.include_hidden,
            show_progress=not args.quiet,
        )
    else:
        report = index.ingest(
            args.paths, prune=args.prune, include_hidden=args.include_hidden, show_progress=not args.quiet
        )
    for _path, message in report.failed:
        print(f"error: {message}", file=sys.stderr)
    if not args.quiet:
        for _path, message in report.notes:
            print(f"note: {message}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.summary())
    return 1 if report.failed else 0


def _shown_breadcrumb(breadcrumb: Sequence[str]) -> str:
    """Return a breadcrumb as printed: each title cut like the outline's (a 2 MB heading is one line)."""
    from .docids import terminal_text
    from .tree.check import shown_title

    return terminal_text(" > ".join(shown_title(t) for t in breadcrumb))


def _retriever(args: argparse.Namespace):
    """Open the store for a query: refuse an empty question, a missing store, an unknown --doc.

    The store is never created here (``Retriever.require_store`` raises StoreNotFoundError).
    """
    from .docids import escaped
    from .errors import ConfigError
    from .retrieve.retriever import Retriever, check_query

    if not args.question.strip():
        raise ConfigError("question: empty; give a question or keywords, e.g. proxypointer query 'notice period'")
    try:
        check_query(args.question)
    except ConfigError as err:  # bytes that are not UTF-8 reach argv as lone surrogates
        raise ConfigError(f"question: {escaped(args.question)[:80]!r} is not valid UTF-8 text; "
                          "give it in UTF-8") from err
    retriever = Retriever(_index(args, one_query=True))
    retriever.require_store()
    if args.doc:
        args.doc, unknown = retriever.resolve_doc_ids(args.doc)
        if unknown:
            names = ", ".join(repr(d) for d in unknown)
            raise ConfigError(f"--doc: no document {names} in the store; `proxypointer status --docs` lists them")
    return retriever


def _cmd_query(args: argparse.Namespace) -> int:
    from .docids import terminal_text
    from .retrieve.delivery import format_outline

    retriever = _retriever(args)
    index = retriever.index
    if args.refs or index.config.retrieval.follow_references:
        from .retrieve.references import ReferenceFollower

        sections = ReferenceFollower(retriever).retrieve(
            args.question, k=args.k, doc_ids=args.doc, source_prefix=args.prefix
        )
    else:
        sections = retriever.retrieve(args.question, k=args.k, doc_ids=args.doc, source_prefix=args.prefix)
    if args.json:  # the shape of HTTP's POST /search: an object with its sections
        k = index.config.retrieval.k if args.k is None else args.k
        out = {"query": args.question, "k": k, "sections": [s.to_dict() for s in sections]}
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    if not sections:
        where = f" under prefix {args.prefix!r}" if args.prefix else ""
        print(f"no sections found{where} (the store has {index.registry.stats()['documents']} documents)")
    for rank, s in enumerate(sections, 1):
        # ranked by the fused rank score; the cosine of its best chunk is shown (not monotonic)
        print(f"[{rank}] {s.citation}  cosine={s.score:.3f}")
        print(f"    {_shown_breadcrumb(s.breadcrumb)}")
        if s.reached_via == "query":
            print("    first because the question names it (label lookup)")
        elif s.reached_via:
            print(f"    cited by {s.reached_via}")
        if s.delivery != "subtree":
            what = "its own text" if s.delivery == "own_text" else "an excerpt of its own text"
            print(f"    section L{s.start_line}-L{s.end_line} is long: showing {what}")
        print()
        # an inline image's base64 payload (hundreds of KB on one line) as its placeholder, as
        # `ask` shows it a model; --json keeps the exact stored lines
        print(terminal_text(replace_data_uris(s.text) if "base64," in s.text else s.text))
        if s.outline:
            print()
            print("    subsections not shown:")
            print(terminal_text(format_outline(s.outline, indent="    ")))
        print()
    return 0


def _cmd_ask(args: argparse.Namespace) -> int:
    from .answer import Answerer, format_context
    from .docids import terminal_text
    from .retrieve.conversation import Session, Turn

    retriever = _retriever(args)
    index = retriever.index
    session = Session.load(index.root, args.session) if args.session else None
    history = session.turns if session else ()
    answerer = Answerer(retriever)
    opts = {"k": args.k, "doc_ids": args.doc, "source_prefix": args.prefix}
    ans = answerer.answer(args.question, history, **opts) if answerer.configured else None
    ctx = answerer.context(args.question, history, **opts) if ans is None else None
    if session is not None:  # saved before printing: a closed pipe must not lose the turn
        top = ctx.sections[:3] if ctx else ()
        session.append(
            ans.to_turn()
            if ans
            else Turn(args.question, "", tuple(s.breadcrumb for s in top), tuple(s.citation for s in top))
        )
        session.save()
    if ctx is not None:
        if args.json:
            print(
                json.dumps(
                    {
                        "question": ctx.question,
                        "query": ctx.query,
                        "answer": None,
                        "blocks": [b.to_dict() for b in ctx.blocks],
                    },
                    indent=2,
                    ensure_ascii=False,
                )
            )
        else:
            print(terminal_text(
                format_context(ctx.blocks) if ctx.blocks else "no sections found (run `proxypointer ingest PATH`)"
            ))
        print(
            "note: no LLM configured, so this is the retrieved context only; add an llm: block "
            "(base_url, model, api_key_env) to the config, e.g. configs/llm-example.yaml",
            file=sys.stderr,
        )
        return 0
    if args.json:
        print(json.dumps(ans.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(terminal_text(ans.text))
        if ans.citations:
            print("\nSources:")
        for n, s in zip(ans.cited, ans.citations, strict=True):
            print(f"[{n}] {s.citation}  {_shown_breadcrumb(s.breadcrumb)}")
    if ans.invalid_citations:
        print(
            f"warning: the answer cites {', '.join(f'[{n}]' for n in ans.invalid_citations)}, "
            f"which match no source (1..{len(ans.sections)})",
            file=sys.stderr,
        )
    return 0


def _cmd_tree(args: argparse.Namespace) -> int:
    from .lines import split_lines
    from .read.readers import default_readers, read_bytes
    from .tree.build import build_tree
    from .tree.pages import stored_page_map

    cfg = _config(args)
    fmt = "json" if args.json else (args.format or "outline")
    status = 0
    store = Path(cfg.store.path)  # a PDF the store converted is read from its conversions, not converted again
    kept = store / CONVERTED_DIR if is_store(store) else None
    readers = default_readers(cfg, conversion_cache=kept)
    for f in args.files:
        path = Path(f)
        reader = readers.get(path.suffix.lower(), readers[".md"])
        read = reader.read(read_bytes(f), f)  # a PDF is converted; page markers are read and emptied
        text = read.text
        pages = stored_page_map(read.pages, split_lines(text)) if read.pages is not None else None
        tree = build_tree(text, path.stem, cfg.tree, paged=read.paged)

        def page_span(node, pages=pages) -> tuple[int, int]:  # noqa: ANN001
            return pages.pages(node.start_line, node.end_line) if pages is not None else (0, 0)

        if args.gold:
            status = max(status, _print_gold(f, args.gold, tree, page_span, pages, args.json))
            continue
        if args.check:
            status = _print_check(f, read, tree, cfg, fmt) or status
            continue
        if args.refs:
            _print_refs(f, tree, split_lines(text), args.json)
            continue
        _print_tree(f, tree, pages, page_span, fmt)
    return status


def _print_check(f: str, read, tree, cfg, fmt: str) -> int:  # noqa: ANN001
    """Print ``tree --check``'s findings for one file; return 1 when one is a warning, else 0."""
    from .lines import split_lines
    from .tree.build import explain_headings
    from .tree.check import TreeWarning, check_tree

    text = read.text
    lines = split_lines(text)
    report = explain_headings(text, cfg.tree, lines=lines, paged=read.paged)[2]
    findings = check_tree(tree, lines, report=report)
    # what the reader could not place (a printed contents' entries that match no line)
    findings = [TreeWarning("unplaced-contents", 0, w.split(": ", 1)[-1], "note") for w in read.warnings
                if "printed contents" in w] + list(findings)
    n_warnings = sum(1 for w in findings if w.severity == "warning")
    if fmt == "json":
        print(json.dumps({"file": f, "nodes": len(tree.nodes), "warnings": n_warnings,
                          "findings": [{"code": w.code, "line": w.line, "severity": w.severity,
                                        "message": w.message} for w in findings]},
                         ensure_ascii=False))
    else:
        for w in findings:
            print(w.format(f))
        if not n_warnings:
            print(f"{f}: ok ({len(tree.nodes)} nodes)")
    return 1 if n_warnings else 0


def _print_tree(f: str, tree, pages, page_span, fmt: str) -> None:  # noqa: ANN001
    """Print one file's tree as ``json``, ``pageindex`` or a readable outline (pages if known)."""
    if fmt == "json":
        print(
            json.dumps(
                {
                    "doc_id": tree.doc_id,
                    "line_count": tree.line_count,
                    "nodes": [
                        {
                            "node_id": n.node_id,
                            "title": n.title,
                            "level": n.level,
                            "start_line": n.start_line,
                            "end_line": n.end_line,
                            "body_end_line": n.body_end_line,
                            "parent_id": n.parent_id,
                            "kind": n.kind,
                            "page_start": page_span(n)[0],
                            "page_end": page_span(n)[1],
                        }
                        for n in tree.nodes
                    ],
                    "page_count": pages.page_count if pages is not None else 0,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
    elif fmt == "pageindex":
        from .tree.check import tree_to_pageindex

        doc = tree_to_pageindex(tree)
        doc["doc_name"] = Path(f).name
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        from .docids import terminal_text
        from .tree.check import tree_outline

        # a deck's pages are its slides (read.slides): say so, as its citations do
        deck = f.lower().endswith(".pptx")
        page, pages_word, span = ("slide", "slides", "slides") if deck else ("p.", "pages", "pp.")
        if not tree.nodes:
            counts = f"{tree.line_count} lines" + (f", {pages.page_count} {pages_word}" if pages is not None else "")
            print(f"{f} ({counts})")
            print("no headings: the document is indexed in sliding windows of lines")
        elif pages is None:
            print(f"{f} ({tree.line_count} lines)")
            print(terminal_text(tree_outline(tree)))
        else:
            print(f"{f} ({tree.line_count} lines, {pages.page_count} {pages_word})")
            for row, node in zip(tree_outline(tree).split("\n"), tree.nodes, strict=True):
                a, b = page_span(node)
                row = terminal_text(row)
                print(f"{row}  " + (f"{page} {a}" if a == b else f"{span} {a}-{b}") if a else row)


def _print_gold(f: str, gold: str, tree, page_span, pages, as_json: bool) -> int:  # noqa: ANN001
    """Print a tree's accuracy against a gold outline; 0, or 1 when the gold cannot be read."""
    from .errors import ProxyPointerError
    from .eval.trees import score_tree
    from .tree.outline import load_outline, pdf_outline

    if gold == "bookmarks" and not f.lower().endswith(".pdf"):
        print(f"error: {f}: --gold bookmarks scores a PDF against its own bookmarks; give a PDF or an "
              "outline file", file=sys.stderr)
        return 1
    try:
        outline = pdf_outline(f) if gold == "bookmarks" else load_outline(gold)
    except ProxyPointerError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if not outline.entries:
        print(f"error: {outline.source}: no outline entries to score against", file=sys.stderr)
        return 1
    if pages is None:
        print(f"{f}: has no pages; a gold outline's pages cannot be checked", file=sys.stderr)
        return 1
    s = score_tree(tree, pages.page_of, outline)
    if as_json:
        print(json.dumps({"file": f, "gold": outline.source, "entries": s.gold, "found": s.found,
                          "recall": round(s.recall, 4), "nesting": round(s.nesting, 4),
                          "nested_checked": s.nested_checked,
                          "missing": [{"title": e.title, "page": e.page} for e in s.missing()],
                          "misnested": [{"title": e.title, "page": e.page, "line": e.line} for e in s.misnested()],
                          "unsupported": [{"line": ln, "title": t} for ln, t in s.unsupported]}, ensure_ascii=False))
        return 0
    print(f"{f} against {outline.source}: {s.summary()}")
    for e in s.missing():
        print(f"  missing     p. {e.page}: {e.title}")
    for e in s.misnested():
        print(f"  misnested   L{e.line} (p. {e.page}): {' > '.join(tree.title_path(e.node_id))}")
    for line, title in s.unsupported:
        print(f"  unsupported L{line} (p. {pages.page_of(line)}): {title}")
    return 0


def _print_refs(f: str, tree, lines: list[str], as_json: bool) -> None:  # noqa: ANN001
    from .tree.references import detect_references

    refs = detect_references(tree, lines)
    if as_json:
        print(
            json.dumps(
                [
                    {
                        "line": r.line,
                        "column": r.column,
                        "kind": r.kind,
                        "label": r.label,
                        "text": r.text,
                        "source_node_id": r.source_node_id,
                        "targets": [
                            {
                                "node_id": t,
                                "title": tree.node(t).title,
                                "start_line": tree.node(t).start_line,
                                "end_line": tree.node(t).end_line,
                            }
                            for t in r.target_node_ids
                        ],
                    }
                    for r in refs
                ],
                indent=2,
                ensure_ascii=False,
            )
        )
        return
    for r in refs:
        target = (
            "; ".join(
                f"{tree.node(t).title} (L{tree.node(t).start_line}-L{tree.node(t).end_line})" for t in r.target_node_ids
            )
            or "unresolved"
        )
        print(f"{f}:{r.line}: {r.kind} {r.label} [{r.text}] -> {target}")
    print(f"{f}: {len(refs)} references, {sum(r.resolved for r in refs)} resolved")


def _cmd_status(args: argparse.Namespace) -> int:
    index = _open_index(args)
    st = index.status()
    docs = sorted(index.registry.documents(), key=lambda r: r.doc_id) if args.docs else []
    if args.json:
        if args.docs:
            st["document_list"] = [{"doc_id": r.doc_id, "title": r.title, "sections": r.n_sections,
                                    "chunks": r.n_chunks, "state": r.state, "source": r.source_path} for r in docs]
        print(json.dumps(st, indent=2))
        return 0
    print(f"store: {st['store']} (collection {st['collection']})")
    print(f"model: {st['model']}")
    print(f"documents: {st['documents']}  sections: {st['sections']}  chunks: {st['chunks']}")
    if st["not_ready"]:
        print(f"unfinished: {st['not_ready']} documents (run `proxypointer check --repair`)")
    if st["chunks_without_record_copy"]:
        print(
            f"record copies: {st['chunks_without_record_copy']} chunks have none yet (queries read them from "
            "Chroma; the next `ingest` or `check --repair` fills them in)"
        )
    for s in st["stale_sources"]:
        print(f"stale: {s['doc_id']} ({s['reason']}): {s['source']}")
    for r in docs:
        state = "" if r.state == "ready" else f" [{r.state}]"
        print(f"{r.doc_id}{state}  {r.n_sections} sections, {r.n_chunks} chunks  {r.source_path}")
    return 0


def _cmd_delete(args: argparse.Namespace) -> int:
    from .retrieve.retriever import Retriever

    index = _open_index(args)
    # a citation's form names the document too (`employee-handbook.md` for `employee-handbook`)
    doc_ids, unknown = Retriever(index).resolve_doc_ids(args.doc_ids)
    unknown = list(dict.fromkeys(unknown))
    if unknown:  # the others are still deleted; the exit status says not all were
        names = ", ".join(repr(d) for d in unknown)
        print(f"error: no document {names} in the store; `proxypointer status --docs` lists them", file=sys.stderr)
        doc_ids = [d for d in doc_ids if d not in set(unknown)]  # said once, here; not again by delete
    doc_ids = list(dict.fromkeys(doc_ids))  # one document named twice (its id, its file name) counts once
    removed = index.delete(doc_ids)
    wanted = len(doc_ids) + len(unknown)
    print(f"deleted {len(removed)} of {wanted} documents")
    if len(removed) < len(doc_ids):  # gone meanwhile (another process deleted it): say which
        gone = ", ".join(repr(d) for d in doc_ids if d not in set(removed))
        print(f"error: {gone} no longer in the store (deleted meanwhile?)", file=sys.stderr)
    return 0 if len(removed) == wanted else 1


def _cmd_check(args: argparse.Namespace) -> int:
    rep = _open_index(args).check(repair=args.repair)
    if args.json:
        print(
            json.dumps(
                {
                    "ok": rep.ok,
                    "documents": rep.documents,
                    "chunks": rep.chunks,
                    "problems": rep.problems,
                    "repaired": rep.repaired,
                },
                indent=2,
            )
        )
    else:
        for p in rep.problems:
            print(f"problem: {p}")
        for r in rep.repaired:
            print(f"repaired: {r}")
        state = "ok" if rep.ok else "repaired (run `proxypointer check` to confirm)" if args.repair else "inconsistent"
        print(f"{state}: {rep.documents} documents, {rep.chunks} chunks")
    return 0 if rep.ok or args.repair else 1


def _cmd_eval(args: argparse.Namespace) -> int:
    from .config import load_config
    from .errors import ConfigError
    from .eval.benchmark import load_benchmark, plot_budgets, to_markdown
    from .eval.harness import EvalSettings, run_evaluation, system_specs

    try:
        budgets = tuple(int(b) for b in args.budgets.split(",") if b.strip())
    except ValueError as err:
        raise ConfigError(f"--budgets: expected integers like 2000,4000, got {args.budgets!r}") from err
    templates = {"doc": "{question}", "corpus": "{title}. {question}"}
    if args.query_template:
        templates = dict.fromkeys(templates, args.query_template)
    settings = EvalSettings(
        benchmark=args.benchmark,
        systems=tuple(s.strip() for s in args.systems.split(",") if s.strip()),
        scopes=tuple(args.scope or ("doc", "corpus")),
        query_templates=templates,
        k=args.k,
        budgets=budgets,
        limit_docs=args.limit_docs,
        bootstrap=args.bootstrap,
        cache=args.cache,
    )
    config = load_config(args.config)
    bench = load_benchmark(
        args.benchmark,
        args.limit_docs or None,
        config=config,
        conversion_cache=Path(settings.cache) / CONVERTED_DIR,
        show_progress=not args.quiet,
    )
    result = run_evaluation(
        bench, config, settings, system_specs(settings.systems, config), show_progress=not args.quiet
    )
    table = to_markdown(result)
    print(table)
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1), encoding="utf-8")
        out.with_suffix(".md").write_text(table + "\n", encoding="utf-8")
        print(f"wrote {out}, {out.with_suffix('.md')}, {plot_budgets(result, args.plot or out.with_suffix('.png'))}")
    elif args.plot:
        print(f"wrote {plot_budgets(result, args.plot)}")
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from .serve import run_http, run_mcp
    from .serve.service import Service

    service = Service(args.store, _config(args), allow_write=getattr(args, "allow_write", False))

    def ready(line: str) -> None:
        print(f"proxypointer: {line}", file=sys.stderr, flush=True)

    try:
        if args.serve_kind == "mcp":
            run_mcp(service, http=args.http, host=args.host, port=args.port, ready=ready)
        else:
            run_http(service, host=args.host, port=args.port, ready=ready)
    finally:
        service.close()
    return 0


def _convert_targets(args: argparse.Namespace) -> list[tuple[Path, Path]]:
    """(PDF or Word/HTML/PowerPoint file, output .md) pairs for `convert`; refuses two files writing one."""
    from .errors import ConfigError
    from .read.office import OFFICE_SUFFIXES
    from .read.pdf import find_pdfs

    pairs: list[tuple[Path, Path]] = []
    out = Path(args.output) if args.output else None
    for given in args.paths:
        root = Path(given)
        for pdf in find_pdfs([root], (".pdf", *OFFICE_SUFFIXES)):
            if out is None:
                target = pdf.with_suffix(".md")
            elif out.suffix.lower() == ".md":
                target = out
            else:
                rel = pdf.relative_to(root) if root.is_dir() else Path(pdf.name)
                target = out / rel.with_suffix(".md")
            pairs.append((pdf, target))
    seen: dict[Path, Path] = {}
    for pdf, target in pairs:
        if target in seen and seen[target] != pdf:
            raise ConfigError(f"{target}: both {seen[target]} and {pdf} would be written here; give -o a folder")
        seen[target] = pdf
    return pairs


def _cmd_convert(args: argparse.Namespace) -> int:
    from .config import load_config
    from .read.pdf import convert_pdfs, converter_from_config

    cfg = load_config(args.config).pdf
    workers = args.workers if args.workers is not None else cfg.workers
    if workers < 1:
        print(f"error: --workers: expected an int >= 1, got {workers}", file=sys.stderr)
        return 2
    pairs = _convert_targets(args)
    if not pairs:
        print("error: no PDF, Word, HTML or PowerPoint files found in the given paths", file=sys.stderr)
        return 1
    from .read.office import OFFICE_SUFFIXES

    office = [(p, t) for p, t in pairs if p.suffix.lower() in OFFICE_SUFFIXES]
    pairs = [(p, t) for p, t in pairs if p.suffix.lower() not in OFFICE_SUFFIXES]
    failed = _convert_office(office)
    if not pairs:
        return 1 if failed else 0
    from .read.readers import PDFReader

    converter = converter_from_config(cfg, workers)
    batch = convert_pdfs([p for p, _ in pairs], converter, workers=workers, show_progress=not args.quiet)
    targets = dict(pairs)
    reader = PDFReader(cfg, converter=converter)
    for doc in batch.converted:
        target = targets[doc.path]
        target.parent.mkdir(parents=True, exist_ok=True)
        # what ingest indexes: the bookmarks or printed contents written in as headings
        text, pages, _ = reader.outlined(doc.markdown, Path(doc.path).read_bytes(), str(doc.path))
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target} ({doc.page_count} pages, {len(pages.line_pages)} lines)")
    for bad in batch.failed:
        print(f"error: {bad.message}", file=sys.stderr)
    print(batch.summary())
    return 1 if batch.failed or failed else 0


def _convert_office(pairs: list[tuple[Path, Path]]) -> int:
    """Convert Word, HTML and PowerPoint files for `convert`; return how many failed."""
    from .read.office import OFFICE_SUFFIXES, OfficeReader
    from .read.readers import read_bytes

    failed = 0
    for src, target in pairs:
        try:
            text = OfficeReader(OFFICE_SUFFIXES[src.suffix.lower()]).convert(read_bytes(src), str(src))
        except ProxyPointerError as err:
            print(f"error: {err}", file=sys.stderr)
            failed += 1
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target} ({text.count(chr(10))} lines)")
    return failed


_COMMANDS = {
    "ingest": _cmd_ingest,
    "query": _cmd_query,
    "tree": _cmd_tree,
    "status": _cmd_status,
    "delete": _cmd_delete,
    "check": _cmd_check,
    "ask": _cmd_ask,
    "eval": _cmd_eval,
    "serve": _cmd_serve,
    "convert": _cmd_convert,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code.

    Exit codes: 0 ok, 1 a ProxyPointerError, 2 usage, 130 interrupted (Ctrl-C), 141 the
    reader of stdout went away (``proxypointer query --json ... | head -2``), which, as for
    other Unix tools, is not an error worth a message.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    command = " ".join(x for x in (args.command, getattr(args, "serve_kind", None)) if x)
    for option in ("store", "config"):
        if getattr(args, option) is not None and command not in args._takes[option]:
            parser.error(f"--{option} does not apply to `{command}`")
    # -v: our own debug messages, other libraries' from INFO up (bm25s, chromadb and urllib3
    # log their internals at DEBUG: "Building index from tokens" is title routing's small index)
    logging.basicConfig(
        level=logging.INFO if args.verbose else (logging.ERROR if args.quiet else logging.WARNING),
        format="%(levelname)s %(name)s: %(message)s",
    )
    if args.verbose:
        logging.getLogger("proxypointer").setLevel(logging.DEBUG)
    # pypdf warns of each damaged object it reads past ("Object 3 0 not defined."), without the
    # file's name and once per reader: without -v a damaged PDF gets our own one-line error only
    # (a level set here is the application's choice, which proxypointer.pdflog leaves alone)
    logging.getLogger("pypdf").setLevel(logging.WARNING if args.verbose else logging.ERROR)
    # The command line is the application: the model loader's own bar ("Loading weights",
    # transformers; a fraction of a second, drawn on every `query`) is not progress of our work,
    # so it is switched off before transformers is first imported, unless the user set the hub's
    # switch. Our own bars (ingest, eval) are plain tqdm and follow -q alone.
    import os

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        code = _COMMANDS[args.command](args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit flush
        return code
    except ProxyPointerError as err:
        if args.verbose:
            logger.exception("failed")
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # Point stdout at devnull so that the exit flush of what is left cannot fail again.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
