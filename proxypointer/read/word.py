"""Word (``*.docx``) to markdown: mammoth reads the document, markdownify writes the markdown.

mammoth (BSD-2-Clause) maps Word's paragraph styles to HTML; :data:`STYLE_MAP` makes the
document's structure the headings: ``Title`` is ``#`` and ``Heading 1``-``Heading 9`` are
``##``-``######`` (Heading 5-9 share the last level: markdown has six). A heading numbered by
Word's list numbering keeps its style's level; its number is not in the text (mammoth does not
write list numbers of headings), a number typed into the heading is. Tables become pipe tables
whose first row is their header (markdownify's ``table_infer_header``), bold stand-alone
paragraphs ``**bold lines**`` (which the tree reads as headings only where nothing better
is written). Images are left out (their alt text, if any, stays).
"""

from __future__ import annotations

import io
import zipfile

from ..errors import DocumentError

__all__ = ["STYLE_MAP", "docx_markdown"]

#: mammoth's style map (its own syntax): Word's title and heading styles -> HTML heading levels.
#: Style names as Word stores them ("heading 1") and as its interface shows them ("Heading 1").
STYLE_MAP = "\n".join(
    ["p[style-name='Title'] => h1:fresh", "p[style-name='title'] => h1:fresh"]
    + [f"p[style-name='{name} {n}'] => h{min(n + 1, 6)}:fresh" for n in range(1, 10) for name in ("Heading", "heading")]
    + ["r[style-name='Strong'] => strong", "p[style-name='Subtitle'] => p"]
)

#: The first bytes of an OLE2 compound file: an old binary ``.doc`` or a password-protected
#: ``.docx`` (Word encrypts the whole package into one).
_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def docx_markdown(data: bytes, path: str) -> str:
    """Convert the bytes of a ``.docx`` file to markdown.

    Args:
        data: The file's bytes.
        path: The file, for messages.

    Returns:
        Markdown: ATX headings from the title and heading styles, paragraphs, lists, pipe
        tables.

    Raises:
        DocumentError: If the file is password-protected or an old ``.doc``, is no zip package,
            or is a zip package without a Word document in it (the message names the file and
            what to do).
    """
    import mammoth
    import markdownify

    if data[:8] == _OLE2:
        raise DocumentError(f"{path}: password-protected or an old binary .doc, not a .docx; "
                            "save it from Word as .docx without a password")
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise DocumentError(f"{path}: not a .docx file (no zip package); save it from Word as .docx again")
    try:
        result = mammoth.convert_to_html(io.BytesIO(data), style_map=STYLE_MAP)
    except (KeyError, zipfile.BadZipFile, ValueError) as err:  # a zip without word/document.xml, a damaged one
        raise DocumentError(f"{path}: damaged .docx or no Word document in it ({err}); "
                            "save it from Word again") from err
    return markdownify.markdownify(result.value, heading_style="ATX", table_infer_header=True, bullets="-",
                                   escape_misc=False)
