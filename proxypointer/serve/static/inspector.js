// proxypointer inspector: vanilla JavaScript over the server's JSON routes, no framework, no CDN.
// Every piece of document text goes into the page through textContent, never as HTML.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const form = $("search"), q = $("q"), kBox = $("k"), statusLine = $("status"), results = $("results");
  const docPane = $("document"), outline = $("outline"), docSection = $("doc-section");
  const DELIVERY = {
    subtree: "whole section",
    own_text: "own text + outline (section over the subtree cap)",
    excerpt: "excerpt around the best chunks + outline",
  };
  const SIGNAL_NAMES = {
    dense: "dense (cosine)", lexical: "lexical (BM25)", routed: "title routing (dense in boosted docs)",
    titles: "title field (BM25)", focus: "focus sentence (dense)",
  };
  // Timings of the last query, read by the browser test and shown in the status line.
  const timings = (window.inspectorTimings = {});
  let current = null; // {doc_id, source, tree}
  let searchSeq = 0;

  // -- small DOM helpers (text only) --------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key === "style") Object.assign(node.style, value); // CSSOM: allowed by the page's CSP
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const present = (nodes) => nodes.filter((n) => n !== null && n !== undefined && n !== false);
  const docPath = (docId) => "/documents/" + docId.split("/").map(encodeURIComponent).join("/");
  const isPdf = (source) => /\.pdf$/i.test(source || "");
  const pages = (a, b) => (a > 0 ? (b > a ? `pp. ${a}-${b}` : `p. ${a}`) : "");
  const fmt = (x, digits) => (typeof x === "number" ? x.toFixed(digits) : "");

  function setStatus(text, isError) {
    statusLine.textContent = text;
    statusLine.classList.toggle("error", Boolean(isError));
  }

  async function api(path, body) {
    const init = body === undefined ? {} : {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
    };
    const response = await fetch(path, init);
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      const detail = typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail || response.status);
      throw new Error(`${response.status}: ${detail}`);
    }
    return data;
  }

  // Lines first..last of a text, numbered; lines lo..hi (the matched chunk) inside one <mark>.
  function numberedText(text, first, lo, hi) {
    const pre = el("pre", { class: "text" });
    if (!text) {
      pre.append(el("span", { class: "ln", "data-n": "", text: "(no text left in the budget)" }));
      return pre;
    }
    let mark = null;
    text.split("\n").forEach((line, i) => {
      const n = first + i;
      const span = el("span", { class: "ln", "data-n": n, text: line || " " });
      if (lo > 0 && n >= lo && n <= hi) {
        if (!mark) {
          mark = el("mark", { class: "hit", title: `best chunk: lines ${lo}-${hi}` });
          pre.append(mark);
        }
        mark.append(span);
      } else {
        pre.append(span);
      }
    });
    return pre;
  }

  function crumbs(parts) {
    const h = el("h2", { class: "crumbs" });
    parts.forEach((part, i) => {
      if (i) h.append(el("span", { class: "sep", "aria-hidden": "true", text: "\u203a" }));
      h.append(el("span", { class: "crumb", text: part }));
    });
    return h;
  }

  function pdfLink(docId, source, page, label) {
    if (!isPdf(source) || !(page > 0)) return null;
    return el("a", { class: "pdf-link", href: `${docPath(docId)}/file#page=${page}`, target: "_blank",
      rel: "noopener", text: label || `PDF p. ${page}` });
  }

  // -- results ------------------------------------------------------------------------------------
  function card(s, rank) {
    const cited = s.citation;
    const lines = `lines ${s.start_line}-${s.end_line}`;
    const shown = s.text_end_line >= s.text_start_line ? `shows ${s.text_start_line}-${s.text_end_line}` : "shows none";
    const delivery = el("span", { class: "badge delivery", title: "delivery policy", text: DELIVERY[s.delivery] || s.delivery });
    const art = el("article", { class: "card", "data-doc": s.doc_id, "data-node": s.node_id, "data-rank": rank },
      el("div", { class: "card-head" },
        el("span", { class: "rank", text: `#${rank}` }),
        crumbs(s.breadcrumb),
        el("span", { class: "score", title: "cosine similarity of the best chunk; rank score in brackets",
          text: `${fmt(s.score, 3)} [${fmt(s.rank_score, 4)}]` })),
      el("p", { class: "meta" },
        el("span", { class: "citation", text: cited }),
        el("span", { text: `${lines} \u00b7 ${shown}` }),
        delivery,
        s.truncated ? el("span", { class: "badge warn", text: "cut to the token budget" }) : null,
        s.reached_via ? el("span", { class: "badge", text: s.reached_via === "query" ? "label named in the query"
          : `reached via ${s.reached_via}` }) : null,
        pages(s.page_start, s.page_end) ? el("span", { text: pages(s.page_start, s.page_end) }) : null),
      numberedText(s.text, s.text_start_line, s.chunk_start_line, s.chunk_end_line));
    if (s.outline && s.outline.length) {
      const list = el("ol", { class: "children" });
      for (const child of s.outline) {
        list.append(el("li", {},
          el("button", { type: "button", class: "link", text: child.title,
            onclick: () => openDocument(s.doc_id, s.source, child.node_id) }),
          ` \u00b7 ${child.citation}`));
      }
      art.append(el("details", { class: "outline-of", open: true },
        el("summary", { text: `Outline: ${s.outline.length} subsections not shown in the text` }), list));
    }
    const why = el("details", { class: "why" }, el("summary", { text: "Why it ranked" }),
      el("p", { class: "pending", text: "reading what fusion saw\u2026" }));
    art.append(why);
    art.append(el("p", { class: "meta actions" },
      el("button", { type: "button", class: "link open-doc", text: "Open in document",
        onclick: () => openDocument(s.doc_id, s.source, s.node_id) }),
      pdfLink(s.doc_id, s.source, s.page_start, `Open PDF at p. ${s.page_start}`)));
    return art;
  }

  function fillWhy(explained) {
    const byKey = new Map(explained.sections.map((x) => [`${x.doc_id}\u0000${x.node_id}`, x]));
    for (const art of results.querySelectorAll("article.card")) {
      const box = art.querySelector("details.why");
      const x = byKey.get(`${art.dataset.doc}\u0000${art.dataset.node}`);
      box.querySelector(".pending")?.remove();
      if (!x) {
        box.append(el("p", { text: "not in the explanation (the index changed between the two requests?)" }));
        continue;
      }
      const table = el("table", {},
        el("thead", {}, el("tr", {}, el("th", { text: "ranking" }), el("th", { text: "weight" }),
          el("th", { text: "rank" }), el("th", { text: "score" }), el("th", { text: "RRF share" }))));
      const body = el("tbody");
      for (const sig of x.signals) {
        const absent = sig.rank === 0;
        body.append(el("tr", { class: absent ? "absent" : null, "data-signal": sig.name },
          el("td", { text: SIGNAL_NAMES[sig.name] || sig.name }),
          el("td", { class: "num", text: fmt(sig.weight, 2) }),
          el("td", { class: "num", text: absent ? "\u2014" : sig.rank }),
          el("td", { class: "num", text: absent ? "" : fmt(sig.score, 3) }),
          el("td", { class: "num", text: absent ? "" : fmt(sig.contribution, 4) })));
      }
      table.append(body);
      const notes = [];
      notes.push(x.fused_rank ? `fused chunk rank ${x.fused_rank} (RRF k=${explained.rrf_k}, ${explained.n} chunks per ranking)`
        : "not in the first fused ranking (added by references or a deeper over-fetch)");
      if (x.chunk_ranks && x.chunk_ranks.length > 1) {
        notes.push(`section score ${fmt(x.section_score, 4)}: its chunks at fused ranks ${x.chunk_ranks.join(" and ")}`);
      }
      if (x.demoted === "exhibit") notes.push("an appended exhibit the query does not ask for: after the other sections");
      if (x.demoted === "breadcrumb-only") notes.push("a heading without text: after the sections with text");
      if (explained.reranker) notes.push(`reranked by the ${explained.reranker} reranker (rerank:) to rank ${x.rank}; `
        + "the table shows what fusion saw before it");
      if (x.labelled) notes.push("the query names its label: put first");
      if (x.implied) notes.push("implied by the query: placed");
      if (explained.named.length) notes.push(`title routing: the query names ${explained.named.join(", ")}`);
      if (explained.boost.length) notes.push(`title routing boosted ${explained.boost.join(", ")}`);
      if (explained.searched !== explained.query) notes.push(`searched as \u201c${explained.searched}\u201d`);
      box.append(table, ...notes.map((n) => el("p", { text: n })));
    }
    results.dataset.why = "done";
  }

  let searchedHash = "";  // the hash of the last search run

  async function runQuery(event) {
    if (event) event.preventDefault();
    const query = q.value.trim();
    if (!query) { q.focus(); return; }
    const k = Math.min(Number(kBox.max) || 20, Math.max(1, parseInt(kBox.value, 10) || 5));
    kBox.value = k;  // the box shows the k that was searched
    const seq = ++searchSeq;
    searchedHash = `#q=${encodeURIComponent(query)}&k=${k}`;
    history.replaceState(null, "", searchedHash);
    results.dataset.state = "loading";
    delete results.dataset.why;
    setStatus("Searching\u2026");
    const t0 = performance.now();
    let answer;
    try {
      answer = await api("/query", { query, k });
    } catch (err) {
      if (seq === searchSeq) { setStatus(err.message, true); results.dataset.state = "error"; }
      return;
    }
    if (seq !== searchSeq) return;
    const t1 = performance.now();
    results.replaceChildren(...answer.sections.map((s, i) => card(s, i + 1)));
    if (!answer.sections.length) results.append(el("p", { class: "card", text: "No section matched." }));
    requestAnimationFrame(() => requestAnimationFrame(() => {
      const t2 = performance.now();
      Object.assign(timings, { queryMs: t1 - t0, renderMs: t2 - t1, sections: answer.sections.length });
      setStatus(`${answer.sections.length} sections \u00b7 ${answer.tokens} word pieces \u00b7 query ${Math.round(t1 - t0)} ms,`
        + ` shown ${Math.round(t2 - t1)} ms later`);
      results.dataset.state = "done";
      // asked once the sections are on screen: a second ranking must not delay the first screen
      api("/explain", { query, k }).then((x) => { if (seq === searchSeq) fillWhy(x); },
        (err) => { if (seq === searchSeq) results.querySelectorAll("details.why .pending").forEach((p) => {
          p.textContent = `no explanation: ${err.message}`; }); });
    }));
  }

  // -- document view ------------------------------------------------------------------------------
  async function openDocument(docId, source, nodeId) {
    try {
      if (!current || current.doc_id !== docId) {
        const tree = await api(`${docPath(docId)}/tree`);
        current = { doc_id: docId, source: source || tree.source, tree };
        renderOutline();
      }
      docPane.hidden = false;
      if (nodeId) await openSection(nodeId);
      else docPane.focus();
    } catch (err) {
      setStatus(err.message, true);
    }
  }

  function renderOutline() {
    const { tree, doc_id: docId, source } = current;
    $("doc-title").textContent = tree.title;
    $("doc-meta").replaceChildren(...present([
      el("span", { class: "citation", text: tree.source }),
      el("span", { text: `${tree.line_count} lines \u00b7 ${tree.nodes.length} sections` }),
      pdfLink(docId, source, 1, "Open the PDF")]));
    outline.replaceChildren(...tree.nodes.map((n) => el("li", { "data-node": n.node_id,
      style: { paddingLeft: `${(n.depth - 1) * 1.1}rem` } },
      el("button", { type: "button", class: "link", text: n.title || "(untitled)",
        onclick: () => openSection(n.node_id) }),
      el("span", { class: "lines", text: [`L${n.start_line}-${n.end_line}`, pages(n.page_start, n.page_end)]
        .filter(Boolean).join(" \u00b7 ") }))));
  }

  async function openSection(nodeId, startLine) {
    const { doc_id: docId, source } = current;
    const query = startLine ? `?start_line=${startLine}` : "";
    const sec = await api(`${docPath(docId)}/sections/${encodeURIComponent(nodeId)}${query}`);
    for (const li of outline.children) li.classList.toggle("current", li.dataset.node === nodeId);
    const more = sec.next_start_line ? el("button", { type: "button", class: "link",
      text: `more (from line ${sec.next_start_line})`, onclick: () => openSection(nodeId, sec.next_start_line) }) : null;
    docSection.replaceChildren(...present([
      el("h3", { text: sec.breadcrumb.join(" \u203a ") }),
      el("p", { class: "meta" }, el("span", { class: "citation", text: sec.citation }),
        pdfLink(docId, source, sec.page_start, `Open PDF at p. ${sec.page_start}`)),
      numberedText(sec.text, sec.start_line, 0, 0), more]));
    docSection.dataset.node = nodeId;
    docSection.hidden = false;
    docSection.focus({ preventScroll: true }); // the page stays put; the document pane scrolls to the section
    docPane.scrollTop = docSection.offsetTop - 8;
  }

  function closeDocument() {
    docPane.hidden = true;
    const back = results.querySelector(`article.card[data-doc="${CSS.escape(current?.doc_id || "")}"] .open-doc`);
    (back || q).focus();
  }

  // -- wiring -------------------------------------------------------------------------------------
  form.addEventListener("submit", runQuery);
  $("doc-close").addEventListener("click", closeDocument);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !docPane.hidden) {
      e.preventDefault();  // a search box would clear its query on the same Esc
      closeDocument();
    }
    else if (e.key === "/" && document.activeElement !== q && !(e.target instanceof HTMLInputElement)) {
      e.preventDefault();
      q.focus();
    }
  });
  // a link to a search (#q=...&k=...): run on load, and when the hash is changed by hand
  function fromHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    if (!params.get("q") || location.hash === searchedHash) return;  // the page's own search
    if (params.get("k")) kBox.value = params.get("k");
    q.value = params.get("q");
    runQuery();
  }
  window.addEventListener("hashchange", fromHash);
  q.focus();
  fromHash();
})();
