"""Small PDFs written inside the tests (reportlab, pypdf): a report and each kind of bad input."""

from __future__ import annotations

from pathlib import Path

HEADER = "ACME CORP ANNUAL REPORT 2024"

#: The report's pages: ("h", title) is a 18 pt bold heading, ("p", text) an 11 pt paragraph
#: line. Page 1: a section starts mid-page (Risk Factors) and runs on through page 2; page 3
#: opens with a heading at the very top.
REPORT_PAGES: list[list[tuple[str, str]]] = [
    [
        ("h", "Business Overview"),
        ("p", "Acme makes anvils, rockets and giant magnets for desert customers."),
        ("p", "Revenue grew ten percent in the year to a record level."),
        ("h", "Risk Factors"),
        ("p", "Roadrunners are fast and our products sometimes miss."),
        ("p", "Competition from other suppliers of desert equipment is strong."),
    ],
    [
        ("p", "Risk factors continue: falling anvils may injure the operator."),
        ("p", "Rocket skates are hard to steer on mountain roads."),
        ("p", "Giant magnets attract more than the intended target."),
        ("p", "Weather may delay deliveries of heavy goods across the desert."),
    ],
    [
        ("h", "Financial Statements"),
        ("p", "Net income was five million dollars, up from four million."),
    ],
]


def write_report(path: Path, pages: list[list[tuple[str, str]]] | None = None) -> Path:
    """A text PDF with a running header and a page-number footer on every page."""
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=letter, invariant=1)
    for number, lines in enumerate(pages or REPORT_PAGES, 1):
        c.setFont("Helvetica", 8)
        c.drawString(72, 760, HEADER)
        y = 700
        for kind, text in lines:
            if kind == "h":
                c.setFont("Helvetica-Bold", 18)
                c.drawString(72, y, text)
                y -= 34
            else:
                c.setFont("Helvetica", 11)
                c.drawString(72, y, text)
                y -= 20
        c.setFont("Helvetica", 8)
        c.drawString(300, 40, str(number))
        c.showPage()
    c.save()
    return path


def write_scanned(path: Path, pages: int = 2) -> Path:
    """Pages with only drawn shapes: no text layer, like a scan."""
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), invariant=1)
    for k in range(pages):
        c.rect(60 + 10 * k, 100, 300, 400, fill=1)
        c.showPage()
    c.save()
    return path


def write_encrypted(path: Path, source: Path) -> Path:
    """``source`` with a user password ("secret"): cannot be opened without it."""
    from pypdf import PdfWriter

    w = PdfWriter(clone_from=str(source))
    w.encrypt(user_password="secret", owner_password="owner", algorithm="RC4-128")
    with open(path, "wb") as f:
        w.write(f)
    return path


def write_owner_only(path: Path, source: Path) -> Path:
    """``source`` encrypted with an empty user password (permissions only): opens without one."""
    from pypdf import PdfWriter

    w = PdfWriter(clone_from=str(source))
    w.encrypt(user_password="", owner_password="owner", algorithm="RC4-128")
    with open(path, "wb") as f:
        w.write(f)
    return path


def write_zero_pages(path: Path) -> Path:
    """A well-formed PDF with an empty page tree."""
    from pypdf import PdfWriter

    with open(path, "wb") as f:
        PdfWriter().write(f)
    return path


def write_truncated(path: Path, source: Path) -> Path:
    """The first half of ``source``: cross-reference table and trailer cut off."""
    data = source.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


#: Bookmarks of :func:`write_bookmarked`: (title, 1-based page, level 0 = outermost), as
#: reportlab's ``addOutlineEntry`` takes them.
BOOKMARKS: list[tuple[str, int, int]] = [
    ("Business Overview", 1, 0),
    ("Risk Factors", 1, 1),
    ("Financial Statements", 3, 0),
    ("Notes to the Statements", 3, 1),
]


def write_bookmarked(path: Path, bookmarks: list[tuple[str, int, int]] | None = None) -> Path:
    """The report of :func:`write_report` with an outline (PDF bookmarks) pointing at its pages."""
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    marks = bookmarks if bookmarks is not None else BOOKMARKS
    c = canvas.Canvas(str(path), pagesize=letter, invariant=1)
    for number, lines in enumerate(REPORT_PAGES, 1):
        for n, (_, page, _) in enumerate(marks):
            if page == number:
                c.bookmarkPage(f"b{n}")  # one destination per entry: reportlab keys entries by it
        y = 700
        for kind, text in lines:
            c.setFont("Helvetica-Bold" if kind == "h" else "Helvetica", 18 if kind == "h" else 11)
            c.drawString(72, y, text)
            y -= 34 if kind == "h" else 20
        c.showPage()
    for n, (title, _, level) in enumerate(marks):
        c.addOutlineEntry(title, f"b{n}", level=level)
    c.save()
    return path


#: A handbook set in three heading styles: a chapter in 18 pt bold, a section in 12 pt bold
#: italic (2 of them) and a subsection in 12 pt bold (4): at one size, the style with fewer
#: headings is the higher level (proxypointer.tree.headingstyles).
STYLED_FONTS = {
    "chapter": ("Helvetica-Bold", 18),
    "section": ("Helvetica-BoldOblique", 12),
    "sub": ("Helvetica-Bold", 12),
    "p": ("Helvetica", 10),
}
STYLED_PAGES: list[list[tuple[str, str]]] = [
    [
        ("chapter", "Operations Handbook"),
        ("p", "This handbook describes how the plant runs from day to day."),
        ("section", "Safety Programme"),
        ("p", "Every worker completes the safety course before the first shift."),
        ("sub", "Protective Equipment"),
        ("p", "Helmets and boots are issued at the gate and returned at night."),
        ("sub", "Incident Reporting"),
        ("p", "Incidents are reported to the shift lead within one hour."),
    ],
    [
        ("section", "Maintenance Schedule"),
        ("p", "Machines are serviced on a fixed weekly rotation by two crews."),
        ("sub", "Weekly Checks"),
        ("p", "Belts, bearings and guards are checked every Monday morning."),
        ("sub", "Annual Overhaul"),
        ("p", "Each line stops for two weeks in August for a full overhaul."),
    ],
]


def write_styled(path: Path, pages: list[list[tuple[str, str]]] | None = None) -> Path:
    """A text PDF whose headings differ only in their type (:data:`STYLED_FONTS`)."""
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=letter, invariant=1)
    for lines in pages or STYLED_PAGES:
        y = 720
        for kind, text in lines:
            font, size = STYLED_FONTS[kind]
            if kind != "p":
                y -= 12
            c.setFont(font, size)
            c.drawString(72, y, text)
            y -= size + 14
        c.showPage()
    c.save()
    return path


def write_lines(path: Path, lines: list[tuple[str, str]], size: float = 10) -> Path:
    """A one-page text PDF: each ``(font, text)`` on a line of its own, all at one size and spacing.

    Bold titles set this way, as tight above their text as a body line, are what converters
    run into the paragraph (:mod:`proxypointer.read.runin`).
    """
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=letter, invariant=1)
    y = 720
    for font, text in lines:
        c.setFont(font, size)
        c.drawString(72, y, text)
        y -= size + 4
    c.showPage()
    c.save()
    return path
