"""Fast CommonMark block scanner: finds top-level headings and front matter, no tokens.

A port of markdown-it-py's block rules (``commonmark`` preset, GFM tables, the front-matter
plugin) that records only what the skeleton tree needs. markdown-it-py stays the reference:
``tests/unit/test_tree_differential.py`` checks that both find the same headings on every
benchmark document and on generated ones; where they differ, this scanner is wrong.
"""

from __future__ import annotations

import re

__all__ = ["_BlockScanner"]

#: Characters markdown-it's ``mdTrim`` strips (JavaScript ``String.prototype.trim`` minus
#: U+FEFF): CommonMark whitespace, Unicode Zs, U+2028 and U+2029.
_MD_TRIM = "\t\n\x0b\x0c\r \xa0\u1680" + "".join(chr(c) for c in range(0x2000, 0x200B)) + (
    "\u2028\u2029\u202f\u205f\u3000"
)
_MAX_NESTING = 20  # markdown-it "commonmark" preset: options.maxNesting
_SPACE_TAB = " \t"
# First characters that can start a block which interrupts a paragraph (table aside).
_INTERRUPT_CHARS = frozenset(">#`~*-_+<0123456789")
_DIGITS = frozenset("0123456789")
_TABLE_DELIM_CHARS = frozenset("|-:")
_TABLE_CELL_RE = re.compile(r"^:?-+:?$")
_HTML_SEQUENCES: list[tuple[re.Pattern[str], re.Pattern[str], bool]] = []


def _html_sequences() -> list[tuple[re.Pattern[str], re.Pattern[str], bool]]:
    # The HTML block start/end conditions of markdown-it (CommonMark spec 4.6), loaded lazily.
    if not _HTML_SEQUENCES:
        from markdown_it.rules_block.html_block import HTML_SEQUENCES

        _HTML_SEQUENCES.extend(HTML_SEQUENCES)
    return _HTML_SEQUENCES


def _escaped_split(s: str) -> list[str]:
    # Table row -> cells, honouring \| (port of markdown-it's escapedSplit).
    if "\\" not in s:
        return s.split("|")
    result: list[str] = []
    current = ""
    last = 0
    escaped = False
    for pos, ch in enumerate(s):
        if ch == "|":
            if not escaped:
                result.append(current + s[last:pos])
                current = ""
                last = pos + 1
            else:
                current += s[last : pos - 1]
                last = pos
        escaped = ch == "\\"
    result.append(current + s[last:])
    return result


class _BlockScanner:
    """CommonMark block scanner that reports top-level headings and front matter.

    A port of markdown-it-py's block rules (commonmark preset + GFM tables + front matter
    plugin) that keeps markdown-it's line bookkeeping (``bMarks``/``tShift``/``sCount``/
    ``bsCount`` per line) but creates no tokens, logs nothing and dispatches on a line's first
    character. markdown-it-py stays the reference: ``tests/unit/test_tree_differential.py``
    compares the two on every bench document and on generated markdown.
    """

    __slots__ = (
        "lines", "bm", "ts", "sc", "bs", "n", "line", "line_max", "blk", "list_indent",
        "parent", "level", "headings", "fm_end", "ends_lf",
    )

    def __init__(self, text: str) -> None:
        lines = text.split("\n")
        # Whether the last line is followed by "\n" in the text (markdown-it reads it).
        self.ends_lf = len(lines) > 1 and (lines[-1] == "" or not lines[-1].strip(_SPACE_TAB))
        if not lines[-1].strip(_SPACE_TAB):
            lines.pop()  # a final line of only spaces/tabs without LF is no line for markdown-it
        ts: list[int] = []
        sc: list[int] = []
        for ln in lines:
            if ln[:1] in _SPACE_TAB and ln:
                k = len(ln) - len(ln.lstrip(_SPACE_TAB))
                ts.append(k)
                if "\t" in ln[:k]:
                    off = 0
                    for ch in ln[:k]:
                        off = off + 4 - off % 4 if ch == "\t" else off + 1
                    sc.append(off)
                else:
                    sc.append(k)
            else:
                ts.append(0)
                sc.append(0)
        self.n = n = len(lines)
        lines.append("")  # sentinel, like markdown-it's fake last line
        ts.append(0)
        sc.append(0)
        self.lines = lines
        self.ts = ts
        self.sc = sc
        self.bm = [0] * (n + 1)
        self.bs = [0] * (n + 1)
        self.line = 0
        self.line_max = n
        self.blk = 0
        self.list_indent = -1
        self.parent = "root"
        self.level = 0
        self.headings: list[tuple[int, int, int, str, bool]] = []
        self.fm_end = 0

    # -- helpers -----------------------------------------------------------------------
    def _empty(self, i: int) -> bool:
        return self.bm[i] + self.ts[i] >= len(self.lines[i])

    def _first(self, i: int) -> str:
        ln = self.lines[i]
        p = self.bm[i] + self.ts[i]
        return ln[p] if p < len(ln) else ""

    def _src0(self) -> str:
        return self.lines[0][:1] if self.lines[0] else ("\n" if self.n > 1 else "")

    # -- driver ------------------------------------------------------------------------
    def scan(self) -> None:
        if self.n:
            self.tokenize(0, self.n)

    def tokenize(self, start: int, end: int) -> None:
        bm, ts, sc, lines = self.bm, self.ts, self.sc, self.lines
        line = start
        while line < end:
            lm = self.line_max
            while line < lm and bm[line] + ts[line] >= len(lines[line]):
                line += 1
            self.line = line
            if line >= end or sc[line] < self.blk:
                break
            if self.level >= _MAX_NESTING:
                self.line = end
                break
            self._block(line, end)
            line = self.line
            if line < end and bm[line] + ts[line] >= len(lines[line]):
                line += 1
                self.line = line

    def _block(self, line: int, end: int) -> None:
        # Rules in markdown-it order; each returns True when it consumed lines.
        if line == 0 and self._front_matter(line, end):
            return
        ln = self.lines[line]
        if "|" in ln and self._table(line, end, False):
            return
        if self.sc[line] - self.blk >= 4:
            self._code(line, end)
            return
        c = self._first(line)
        if c in "`~" and self._fence(line, end, False):
            return
        if c == ">":
            self._blockquote(line, end)
            return
        if c in "*-_" and self._hr(line):
            self.line = line + 1
            return
        if (c in "*-+" or c in _DIGITS) and self._list(line, end, False):
            return
        if c == "[" and self._reference(line, False):
            return
        if c == "<" and self._html_block(line, end, False):
            return
        if c == "#" and self._heading(line, False):
            return
        self._paragraph_or_lheading(line, end)

    # -- terminators ---------------------------------------------------------------------
    def _interrupts(self, i: int, end: int, kind: str) -> bool:
        """Whether line i starts a block that ends a ``kind`` block (markdown-it alt lists)."""
        if kind in ("paragraph", "reference"):
            nxt = i + 1
            if (
                nxt < end
                and "|" in self.lines[i]
                and self._first(nxt) in _TABLE_DELIM_CHARS
                and self._table(i, end, True)
            ):
                return True
        if self.sc[i] - self.blk >= 4:
            return False
        c = self._first(i)
        if c not in _INTERRUPT_CHARS:
            return False
        if c in "`~":
            if self._fence(i, end, True):
                return True
        elif c == ">":
            return True
        if c in "*-_" and self._hr(i):
            return True
        if kind == "table":
            kind = "blockquote"
        if kind != "list":
            if (c in "*-+" or c in _DIGITS) and self._list(i, end, True):
                return True
            if c == "<" and self._html_block(i, end, True):
                return True
            if c == "#" and self._heading(i, True):
                return True
        return False

    # -- rules -------------------------------------------------------------------------
    def _front_matter(self, start: int, end: int) -> bool:
        if self._src0() != "-":
            return False
        lines, bm, ts, sc = self.lines, self.bm, self.ts, self.sc
        ln = lines[start]
        s = bm[start] + ts[start]
        pos = s + 1
        mx = len(ln)
        while pos <= mx and pos < len(ln) and ln[pos] == "-":
            pos += 1
        # markdown-it reads one character past the line end ("\n"), which is never "-".
        count = pos - s
        if count < 3:
            return False
        nxt = start
        closed = False
        while True:
            nxt += 1
            if nxt >= end:
                return False
            ln = lines[nxt]
            s = bm[nxt] + ts[nxt]
            mx = len(ln)
            if sc[nxt] == 0 and ln.startswith("...", s) and not ln[s + 3 :].strip(_SPACE_TAB):
                closed = True
                break
            if s < mx and sc[nxt] < self.blk:
                break
            if ln[s : s + 1] != "-":
                continue
            if sc[nxt] - self.blk >= 4:
                continue
            p = s + 1
            while p < mx and ln[p] == "-":
                p += 1
            if p - s < count:
                continue
            if ln[p:].strip(_SPACE_TAB):
                continue
            closed = True
            break
        self.line = nxt + (1 if closed else 0)
        if self.level == 0:
            self.fm_end = self.line
        return True

    def _table(self, start: int, end: int, silent: bool) -> bool:
        if start + 2 > end:
            return False
        lines, bm, ts, sc = self.lines, self.bm, self.ts, self.sc
        nxt = start + 1
        if sc[nxt] < self.blk or sc[nxt] - self.blk >= 4:
            return False
        ln = lines[nxt]
        pos = bm[nxt] + ts[nxt]
        mx = len(ln)
        if pos + 1 >= mx:
            return False
        c1 = ln[pos]
        c2 = ln[pos + 1]
        if c1 not in _TABLE_DELIM_CHARS:
            return False
        if c2 not in _TABLE_DELIM_CHARS and c2 not in _SPACE_TAB:
            return False
        if c1 == "-" and c2 in _SPACE_TAB:
            return False
        rest = ln[pos + 2 :]
        if rest.strip("|-: \t"):
            return False
        columns = ln[pos:].split("|")
        aligns = 0
        last = len(columns) - 1
        for k, col in enumerate(columns):
            t = col.strip(_MD_TRIM)
            if not t:
                if k == 0 or k == last:
                    continue
                return False
            if not _TABLE_CELL_RE.search(t):
                return False
            aligns += 1
        head = lines[start][bm[start] + ts[start] :].strip(_MD_TRIM)
        if "|" not in head:
            return False
        if sc[start] - self.blk >= 4:
            return False
        cols = _escaped_split(head)
        if cols and cols[0] == "":
            cols.pop(0)
        if cols and cols[-1] == "":
            cols.pop()
        ncols = len(cols)
        if ncols == 0 or ncols != aligns:
            return False
        if silent:
            return True
        old_parent = self.parent
        self.parent = "table"
        autocompleted = 0
        nxt = start + 2
        while nxt < end:
            if sc[nxt] < self.blk:
                break
            if self._interrupts(nxt, end, "table"):
                break
            text = lines[nxt][bm[nxt] + ts[nxt] :].strip(_MD_TRIM)
            if not text:
                break
            if sc[nxt] - self.blk >= 4:
                break
            cols = _escaped_split(text)
            if cols and cols[0] == "":
                cols.pop(0)
            if cols and cols[-1] == "":
                cols.pop()
            autocompleted += ncols - len(cols)
            if autocompleted > 0x10000:
                break
            nxt += 1
        self.parent = old_parent
        self.line = nxt
        return True

    def _code(self, start: int, end: int) -> None:
        bm, ts, sc, lines, blk = self.bm, self.ts, self.sc, self.lines, self.blk
        last = nxt = start + 1
        while nxt < end:
            if bm[nxt] + ts[nxt] >= len(lines[nxt]):
                nxt += 1
                continue
            if sc[nxt] - blk >= 4:
                nxt += 1
                last = nxt
                continue
            break
        self.line = last

    def _fence(self, start: int, end: int, silent: bool) -> bool:
        lines, bm, ts, sc = self.lines, self.bm, self.ts, self.sc
        ln = lines[start]
        pos = bm[start] + ts[start]
        mx = len(ln)
        if sc[start] - self.blk >= 4 or pos + 3 > mx:
            return False
        marker = ln[pos]
        if marker not in "~`":
            return False
        p = pos
        while p < mx and ln[p] == marker:
            p += 1
        length = p - pos
        if length < 3:
            return False
        if marker == "`" and "`" in ln[p:]:
            return False
        if silent:
            return True
        nxt = start
        closed = False
        while True:
            nxt += 1
            if nxt >= end:
                break
            ln = lines[nxt]
            pos = bm[nxt] + ts[nxt]
            mx = len(ln)
            if pos < mx and sc[nxt] < self.blk:
                break
            if pos >= mx:
                if nxt == self.n - 1 and not self.ends_lf:
                    break  # markdown-it: IndexError at the end of the source
                continue
            if ln[pos] != marker:
                continue
            if sc[nxt] - self.blk >= 4:
                continue
            p = pos
            while p < mx and ln[p] == marker:
                p += 1
            if p - pos < length:
                continue
            if ln[p:].strip(_SPACE_TAB):
                continue
            closed = True
            break
        self.line = nxt + (1 if closed else 0)
        return True

    def _hr(self, i: int) -> bool:
        if self.sc[i] - self.blk >= 4:
            return False
        ln = self.lines[i]
        pos = self.bm[i] + self.ts[i]
        marker = ln[pos : pos + 1]
        if marker not in ("*", "-", "_"):
            return False
        rest = ln[pos + 1 :]
        if rest.strip(marker + _SPACE_TAB):
            return False
        return rest.count(marker) + 1 >= 3

    def _quote_line(self, i: int) -> bool:
        # Shift line i past its ">" marker (markdown-it's bookkeeping); True if now empty.
        lines, bm, ts, sc, bs = self.lines, self.bm, self.ts, self.sc, self.bs
        ln = lines[i]
        pos = bm[i] + ts[i] + 1
        mx = len(ln)
        initial = offset = sc[i] + 1
        ch = ln[pos] if pos < mx else ""
        adjust_tab = False
        if ch == " ":
            pos += 1
            initial += 1
            offset += 1
            space_after = True
        elif ch == "\t":
            space_after = True
            if (bs[i] + offset) % 4 == 3:
                pos += 1
                initial += 1
                offset += 1
            else:
                adjust_tab = True
        else:
            space_after = False
        bm[i] = pos
        while pos < mx:
            ch = ln[pos]
            if ch == "\t":
                offset += 4 - (offset + bs[i] + (1 if adjust_tab else 0)) % 4
            elif ch == " ":
                offset += 1
            else:
                break
            pos += 1
        bs[i] = sc[i] + 1 + (1 if space_after else 0)
        sc[i] = offset - initial
        ts[i] = pos - bm[i]
        return pos >= mx

    def _blockquote(self, start: int, end: int) -> None:
        lines, bm, ts, sc, bs = self.lines, self.bm, self.ts, self.sc, self.bs
        old_line_max = self.line_max
        saved = [(bm[start], ts[start], sc[start], bs[start])]
        last_empty = self._quote_line(start)
        old_parent = self.parent
        self.parent = "blockquote"
        nxt = start + 1
        while nxt < end:
            outdented = sc[nxt] < self.blk
            ln = lines[nxt]
            pos = bm[nxt] + ts[nxt]
            if pos >= len(ln):
                break
            if ln[pos] == ">" and not outdented:
                saved.append((bm[nxt], ts[nxt], sc[nxt], bs[nxt]))
                last_empty = self._quote_line(nxt)
                nxt += 1
                continue
            if last_empty:
                break
            if self._interrupts(nxt, end, "blockquote"):
                self.line_max = nxt
                if self.blk != 0:
                    saved.append((bm[nxt], ts[nxt], sc[nxt], bs[nxt]))
                    sc[nxt] -= self.blk
                break
            saved.append((bm[nxt], ts[nxt], sc[nxt], bs[nxt]))
            sc[nxt] = -1  # lazy paragraph continuation
            nxt += 1
        old_indent = self.blk
        self.blk = 0
        self.level += 1
        self.tokenize(start, nxt)
        self.level -= 1
        self.line_max = old_line_max
        self.parent = old_parent
        for k, (b, t, s, q) in enumerate(saved):
            bm[start + k] = b
            ts[start + k] = t
            sc[start + k] = s
            bs[start + k] = q
        self.blk = old_indent

    def _bullet_marker(self, i: int) -> int:
        ln = self.lines[i]
        pos = self.bm[i] + self.ts[i]
        if ln[pos : pos + 1] not in ("*", "-", "+"):
            return -1
        pos += 1
        if pos < len(ln) and ln[pos] not in _SPACE_TAB:
            return -1
        return pos

    def _ordered_marker(self, i: int) -> int:
        ln = self.lines[i]
        start = pos = self.bm[i] + self.ts[i]
        mx = len(ln)
        if pos + 1 >= mx or ln[pos] not in _DIGITS:
            return -1
        pos += 1
        while True:
            if pos >= mx:
                return -1
            ch = ln[pos]
            pos += 1
            if ch in _DIGITS:
                if pos - start >= 10:
                    return -1
                continue
            if ch in (")", "."):
                break
            return -1
        if pos < mx and ln[pos] not in _SPACE_TAB:
            return -1
        return pos

    def _list(self, start: int, end: int, silent: bool) -> bool:
        lines, bm, ts, sc, bs = self.lines, self.bm, self.ts, self.sc, self.bs
        if sc[start] - self.blk >= 4:
            return False
        if self.list_indent >= 0 and sc[start] - self.list_indent >= 4 and sc[start] < self.blk:
            return False
        terminating = silent and self.parent == "paragraph" and sc[start] >= self.blk
        after = self._ordered_marker(start)
        if after >= 0:
            ordered = True
            mstart = bm[start] + ts[start]
            if terminating and int(lines[start][mstart : after - 1]) != 1:
                return False
        else:
            after = self._bullet_marker(start)
            if after < 0:
                return False
            ordered = False
        if terminating and not lines[start][after:].strip(_SPACE_TAB):
            return False
        marker = lines[start][after - 1]
        if silent:
            return True
        nxt = start
        old_parent = self.parent
        self.parent = "list"
        self.level += 1
        while nxt < end:
            ln = lines[nxt]
            pos = after
            mx = len(ln)
            initial = offset = sc[nxt] + after - (bm[start] + ts[start])
            while pos < mx:
                ch = ln[pos]
                if ch == "\t":
                    offset += 4 - (offset + bs[nxt]) % 4
                elif ch == " ":
                    offset += 1
                else:
                    break
                pos += 1
            content_start = pos
            indent_after = 1 if content_start >= mx else offset - initial
            if indent_after > 4:
                indent_after = 1
            indent = initial + indent_after
            old_ts, old_sc = ts[start], sc[start]
            old_list_indent = self.list_indent
            self.list_indent = self.blk
            self.blk = indent
            ts[start] = content_start - bm[start]
            sc[start] = offset
            self.level += 1
            if content_start >= mx and self._empty(start + 1):
                self.line = min(self.line + 2, end)
            else:
                self.tokenize(start, end)
            self.level -= 1
            self.blk = self.list_indent
            self.list_indent = old_list_indent
            ts[start] = old_ts
            sc[start] = old_sc
            nxt = start = self.line
            if nxt >= end:
                break
            if sc[nxt] < self.blk:
                break
            if sc[start] - self.blk >= 4:
                break
            if self._interrupts(nxt, end, "list"):
                break
            if ordered:
                after = self._ordered_marker(nxt)
                if after < 0:
                    break
            else:
                after = self._bullet_marker(nxt)
                if after < 0:
                    break
            if marker != lines[nxt][after - 1]:
                break
        self.level -= 1
        self.line = nxt
        self.parent = old_parent
        return True

    def _next_ref_line(self, i: int) -> str | None:
        # markdown-it reference.getNextLine: the next line's text (with LF), or None.
        if i >= self.line_max or self._empty(i):
            return None
        if not (self.sc[i] - self.blk >= 4 or self.sc[i] < 0):
            old = self.parent
            self.parent = "reference"
            stop = self._interrupts(i, self.line_max, "reference")
            self.parent = old
            if stop:
                return None
        return self._line_text(i)

    def _line_text(self, i: int) -> str:
        text = self.lines[i][self.bm[i] + self.ts[i] :]
        if i < self.n - 1 or self.ends_lf:
            text += "\n"
        return text

    def _reference(self, start: int, silent: bool) -> bool:
        from markdown_it.common.normalize_url import normalizeLink, validateLink
        from markdown_it.common.utils import isSpace, normalizeReference
        from markdown_it.helpers import parseLinkDestination, parseLinkTitle

        if self.sc[start] - self.blk >= 4:
            return False
        nxt = start + 1
        string = self._line_text(start)
        if string[:1] != "[":
            return False
        mx = len(string)
        label_end = -1
        pos = 1
        while pos < mx:
            ch = string[pos]
            if ch == "[":
                return False
            if ch == "]":
                label_end = pos
                break
            if ch == "\n":
                more = self._next_ref_line(nxt)
                if more is not None:
                    string += more
                    mx = len(string)
                    nxt += 1
            elif ch == "\\":
                pos += 1
                if pos < mx and string[pos] == "\n":
                    more = self._next_ref_line(nxt)
                    if more is not None:
                        string += more
                        mx = len(string)
                        nxt += 1
            pos += 1
        if label_end < 0 or string[label_end + 1 : label_end + 2] != ":":
            return False
        pos = label_end + 2
        while pos < mx:
            ch = string[pos]
            if ch == "\n":
                more = self._next_ref_line(nxt)
                if more is not None:
                    string += more
                    mx = len(string)
                    nxt += 1
            elif not isSpace(ord(ch)):
                break
            pos += 1
        dest = parseLinkDestination(string, pos, mx)
        if not dest.ok or not validateLink(normalizeLink(dest.str)):
            return False
        pos = dest.pos
        dest_end_pos = pos
        dest_end_line = nxt
        begin = pos
        while pos < mx:
            ch = string[pos]
            if ch == "\n":
                more = self._next_ref_line(nxt)
                if more is not None:
                    string += more
                    mx = len(string)
                    nxt += 1
            elif not isSpace(ord(ch)):
                break
            pos += 1
        title_res = parseLinkTitle(string, pos, mx, None)
        while title_res.can_continue:
            more = self._next_ref_line(nxt)
            if more is None:
                break
            string += more
            pos = mx
            mx = len(string)
            nxt += 1
            title_res = parseLinkTitle(string, pos, mx, title_res)
        if pos < mx and begin != pos and title_res.ok:
            title = title_res.str
            pos = title_res.pos
        else:
            title = ""
            pos = dest_end_pos
            nxt = dest_end_line
        while pos < mx and isSpace(ord(string[pos])):
            pos += 1
        if pos < mx and string[pos] != "\n" and title:
            pos = dest_end_pos
            nxt = dest_end_line
            while pos < mx and isSpace(ord(string[pos])):
                pos += 1
        if pos < mx and string[pos] != "\n":
            return False
        if not normalizeReference(string[1:label_end]):
            return False
        if silent:
            return True
        self.line = nxt
        return True

    def _html_block(self, start: int, end: int, silent: bool) -> bool:
        lines, bm, ts, sc = self.lines, self.bm, self.ts, self.sc
        if sc[start] - self.blk >= 4:
            return False
        text = lines[start][bm[start] + ts[start] :]
        if text[:1] != "<":
            return False
        seq = None
        for candidate in _html_sequences():
            if candidate[0].search(text):
                seq = candidate
                break
        if seq is None:
            return False
        if silent:
            return seq[2]
        nxt = start + 1
        ends_on_blank = bool(seq[1].search(""))
        if not seq[1].search(text):
            while nxt < end:
                if sc[nxt] < self.blk and (ends_on_blank or not self._empty(nxt)):
                    break
                text = lines[nxt][bm[nxt] + ts[nxt] :]
                if seq[1].search(text):
                    if text:
                        nxt += 1
                    break
                nxt += 1
        self.line = nxt
        return True

    def _heading(self, start: int, silent: bool) -> bool:
        if self.sc[start] - self.blk >= 4:
            return False
        ln = self.lines[start]
        pos = self.bm[start] + self.ts[start]
        mx = len(ln)
        if ln[pos : pos + 1] != "#":
            return False
        p = pos + 1
        while p < mx and ln[p] == "#" and p - pos <= 6:
            p += 1
        level = p - pos
        if level > 6 or (p < mx and ln[p] not in _SPACE_TAB):
            return False
        if silent:
            return True
        self.line = start + 1
        if self.level == 0:
            e = mx
            while e > p and ln[e - 1] in _SPACE_TAB:
                e -= 1
            t = e
            while t > p and ln[t - 1] == "#":
                t -= 1
            if t > p and ln[t - 1] in _SPACE_TAB:
                e = t
            self.headings.append((start, start + 1, level, ln[p:e].strip(_MD_TRIM), False))
        return True

    def _paragraph_or_lheading(self, start: int, end: int) -> None:
        lines, bm, ts, sc = self.lines, self.bm, self.ts, self.sc
        blk = self.blk
        old_parent = self.parent
        self.parent = "paragraph"
        nxt = start + 1
        level = 0
        while nxt < end:
            ln = lines[nxt]
            pos = bm[nxt] + ts[nxt]
            mx = len(ln)
            if pos >= mx:
                break
            s = sc[nxt]
            if s - blk > 3:
                nxt += 1
                continue
            c = ln[pos]
            if s >= blk and c in "-=" and not ln[pos:].rstrip(_SPACE_TAB).strip(c):
                level = 1 if c == "=" else 2
                break
            if s < 0:
                nxt += 1
                continue
            if (c in _INTERRUPT_CHARS or "|" in ln) and self._interrupts(nxt, end, "paragraph"):
                break
            nxt += 1
        if not level and end < self.line_max:
            # markdown-it's paragraph (unlike lheading) runs up to lineMax, table checks too
            lm = self.line_max
            nxt = start + 1
            while nxt < lm:
                ln = lines[nxt]
                pos = bm[nxt] + ts[nxt]
                if pos >= len(ln):
                    break
                s = sc[nxt]
                if s - blk > 3 or s < 0:
                    nxt += 1
                    continue
                if self._interrupts(nxt, lm, "paragraph"):
                    break
                nxt += 1
        self.parent = old_parent
        if level:
            self.line = nxt + 1
            if self.level == 0:
                content = "\n".join(lines[start:nxt]).strip(_MD_TRIM)
                self.headings.append((start, nxt + 1, level, content, True))
        else:
            self.line = nxt
