"""Text from users' files, shown as text: never as markdown, LaTeX, a link or an image.

Streamlit renders nearly every string it shows (``st.markdown``, ``st.warning``, ``st.error``,
``st.info``, ``st.caption``, headers, widget labels, radio options, progress texts) as
GitHub-flavoured markdown with LaTeX, colour directives, shortcodes (``:material/...:``,
``:streamlit:``, emoji) and autolinks of bare URLs; plotly renders a subset of HTML, links
included, in titles, axis labels, legends and hover texts. A class name, column name, file
name, model name or cell value placed there can make the page fetch remote content or show
convincing fake links to whoever opens a shared file. Two kinds of text therefore reach the
screen, and each has one way there:

* **text a user supplied** goes through :func:`code`: an inline code span, which markdown
  shows character for character (no escape sequence, shortcode, formula or autolink is
  interpreted inside it), and which tells the reader that these are the file's own words;
* **calibdash's own prose** that is not meant as markdown (messages of the loader and of
  exceptions) goes through :func:`escape_markdown`, which backslash-escapes every character
  markdown or LaTeX acts on and breaks, with an invisible word joiner (U+2060), the
  patterns Streamlit rewrites after parsing (autolinks, shortcodes, typographic arrows), so
  that user text that reached a message unmarked is still shown as text.

The loader's messages keep their wording and mark the user text in them: :func:`user` wraps
a string in a :class:`UserText`, a ``str`` that f-strings (``{x}`` and ``{x!r}``) write
between two private-use marker characters. :class:`~calibdash.errors.InputError` and
:class:`~calibdash.errors.LoadWarning` split their message at the markers: ``str()`` is the
plain message the command line and Python users always saw, and ``.parts`` the
``(text, is_user)`` pieces from which :func:`markdown` builds the app's display text. The
markers never leave a message: the loader's other outputs (:class:`~calibdash.Predictions`'
``source_name`` and ``class_names``) are plain strings.

For plotly, :func:`plot_text` escapes the HTML plotly would act on, the ``$`` of its LaTeX
and the ``%`` of its hover templates; plotly decodes the entities back to the characters.

The options of a selectbox or multiselect are plain text in Streamlit and take names as they
are (escaped they would show their backslashes); radio options are markdown, and none shows
user text. ``st.dataframe`` cells and Vega-Lite charts draw text, not markup.
tests/e2e/test_hostile_browser.py checks all of this in chromium.

Nothing here imports Streamlit, plotly or another calibdash module: the module is on the package's
ground floor, beside :mod:`calibdash.errors`, whose messages it marks. (:mod:`calibdash.display.text`
re-exports it for compatibility.)
"""

from __future__ import annotations

import html
import re

__all__ = ["OPEN", "CLOSE", "JOINER", "SHOWN_CHARACTERS", "CELL_CHARACTERS", "UserText", "CellText", "cell", "user", "quoted",
           "show_controls", "strip_marks", "split_marked", "code", "escape_markdown",
           "markdown", "plot_text"]

# Private-use characters: no file name or label carries them by accident, and user() drops
# any that a user's text does carry. (Either way both kinds of piece are shown as text.)
OPEN, CLOSE = "\ue000", "\ue001"
_MARKS = re.compile(f"[{OPEN}{CLOSE}]")
_MARKED = re.compile(f"{OPEN}(.*?){CLOSE}", re.DOTALL)


# A message shows at most this many characters of one piece of user text (a file's path
# included): a cell can hold megabytes (a 5 MB label made a 5 MB message in the app), a
# message should not. A cell's value, quoted by cell(), is cut shorter.
SHOWN_CHARACTERS = 200
CELL_CHARACTERS = 40


class UserText(str):
    """A string from a user's file (or a caller's argument) in a message being built.

    Compares, hashes and slices as the plain string. Formatted by an f-string (``{x}``,
    ``{x:...}``) or by ``repr`` (``{x!r}``, ``repr(list_of_them)``) it comes out between
    the markers, so that the message remembers which of its words were the user's;
    ``str(x)`` and concatenation give plain strings. Formatted, a text longer than
    :data:`SHOWN_CHARACTERS` is cut there, and the message says how long it was.
    """

    __slots__ = ()
    shown = SHOWN_CHARACTERS

    def _shown(self):
        text = str(self)
        if len(text) <= self.shown:
            return text, ""
        return text[:self.shown - 1] + "\u2026", f" ({len(text):,} characters)"

    def __format__(self, spec):
        text, note = self._shown()
        return f"{OPEN}{format(text, spec)}{CLOSE}{note}"

    def __repr__(self):
        text, note = self._shown()
        return f"{OPEN}{str.__repr__(text)}{CLOSE}{note}"


class CellText(UserText):
    """A cell's value (a label, a class name) in a message: a :class:`UserText` cut at :data:`CELL_CHARACTERS`."""

    __slots__ = ()
    shown = CELL_CHARACTERS


def user(text):
    """Mark ``text`` (any object, shown by its ``str``) as supplied by a user.

    Marker characters inside ``text`` are dropped: the whole is the user's, and a user's
    own text cannot open or close a mark.
    """
    if isinstance(text, UserText):
        return text
    return UserText(strip_marks(text))


def cell(text):
    """Mark ``text``, a cell's value, as supplied by a user (see :func:`user`); a message shows
    at most :data:`CELL_CHARACTERS` of it."""
    return CellText(strip_marks(text))


def quoted(value):
    """``repr(value)``, marked as user text when ``value`` is a string (a number stays prose)."""
    return repr(user(value)) if isinstance(value, str) else repr(value)


def strip_marks(text):
    """``text`` without the markers of user text."""
    return _MARKS.sub("", str(text))


def split_marked(text):
    """The ``(text, is_user)`` pieces of a message built with :func:`user`; empty pieces dropped."""
    text = str(text)
    parts, pos = [], 0
    for m in _MARKED.finditer(text):
        if m.start() > pos:
            parts.append((strip_marks(text[pos:m.start()]), False))
        if m.group(1):
            parts.append((strip_marks(m.group(1)), True))
        pos = m.end()
    if pos < len(text):
        parts.append((strip_marks(text[pos:]), False))
    return [(t, u) for t, u in parts if t]


# -- Streamlit markdown --------------------------------------------------------------------
# Everything markdown (CommonMark + GFM), LaTeX ($) and Streamlit's directives (:) act on;
# ASCII punctuation, so CommonMark's backslash escape applies to each. Quotes, =, /, ?, %, @
# and the like stay as they are: nothing is made of them once these are escaped.
_ACTIVE = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$:&])")
_NEWLINES = re.compile(r"\r\n|\r|\n")
JOINER = "\u2060"  # WORD JOINER: invisible, no line break, not a word character or space
# Rewrites Streamlit applies to the parsed text, where a backslash escape no longer shows:
# GFM autolinks of bare URLs (http://..., www.) and e-mail addresses, the shortcodes
# :name: (emoji, :streamlit:, :material/...:) and the typographic arrows -> <- <-> -- >= <= ~=
# between spaces. A joiner inside each trigger breaks the pattern and shows nothing.
_DEFUSE = re.compile(
    r"(?<=:)(?=[\w+\-/])"                          # after the colon of a shortcode or a URL scheme
    r"|(?i:(?<=www))(?=\.)"                         # www.
    r"|(?=@)"                                       # e-mail addresses
    r"|(?:(?<=^[<>~-])|(?<=\s[<>~-]))(?=(?:->|-|=|>)(?:\s|$))"  # inside an arrow between spaces
)


# Unicode's bidirectional controls reorder the text around them: "patient\u202egnp.csv" displays
# as "patientvsc.png". In user text they are shown by their code point, never obeyed.
_BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def show_controls(text):
    """``text`` with every bidirectional control character written as ``<U+202E>`` (and so on)."""
    return _BIDI_CONTROLS.sub(lambda m: f"<U+{ord(m.group()):04X}>", str(text))


def escape_markdown(text):
    """``text`` as Streamlit markdown that displays ``text`` itself, on one line.

    Every character markdown, LaTeX or Streamlit's directives act on is backslash-escaped;
    autolinks, shortcodes and typographic arrows are broken by an invisible word joiner
    (U+2060); line breaks become spaces. Letters, digits, spaces and other characters are
    unchanged, but for bidirectional controls, shown by their code point. Meant for prose; user
    text goes through :func:`code`.
    """
    text = _NEWLINES.sub(" ", show_controls(text))
    return _ACTIVE.sub(r"\\\1", _DEFUSE.sub(JOINER, text))


def code(text):
    """``text`` as a markdown inline code span: shown character for character, in a code font.

    Line breaks become spaces (a code span cannot hold a paragraph break). The fence is
    longer than any run of backticks inside, and padded with a space where the text starts
    or ends with a backtick or a space (markdown strips one space from each side). Streamlit
    rewrites ``:material/`` to ``:material_`` everywhere in the source, code spans included,
    so at each occurrence the colon is written outside the span. Bidirectional controls are
    shown by their code point (:func:`show_controls`).
    """
    text = _NEWLINES.sub(" ", show_controls(text))
    if not text:
        return ""
    pieces = re.split(r"(?<=:)(?=material/)", text)
    if len(pieces) > 1:
        out = []
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            body = piece if last else piece[:-1]
            out.append(_span(body) + ("" if last else "\\:"))
        return "".join(out)
    return _span(text)


def _span(text):
    if not text:
        return ""
    runs = re.findall(r"`+", text)
    fence = "`" * (max(map(len, runs)) + 1 if runs else 1)
    pad = " " if text.strip(" ") and (text[0] in "` " or text[-1] in "` ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown(*pieces):
    """Streamlit markdown showing ``pieces`` one after another, each literally.

    A piece with ``.parts`` (:class:`~calibdash.errors.InputError`,
    :class:`~calibdash.errors.LoadWarning`) or a string with marks is shown with its user
    text as code and the rest escaped; a :class:`UserText` as code; anything else (any
    exception or string) by its ``str``, escaped.
    """
    out = []
    for piece in pieces:
        if isinstance(piece, UserText):
            out.append(code(piece))
            continue
        parts = getattr(piece, "parts", None)
        if parts is None:
            parts = split_marked(str(piece))
        out.extend(code(t) if is_user else escape_markdown(t) for t, is_user in parts)
    return "".join(out)


# -- plotly --------------------------------------------------------------------------------
def plot_text(text):
    """``text`` for a plotly title, axis label, legend entry, category or hover template.

    plotly reads a subset of HTML in its text (``<a href>``, ``<b>``, ``<br>``...), LaTeX
    between ``$`` (when MathJax is on the page) and ``%{...}`` in hover templates; ``&``, ``<``
    and ``>`` become entities and ``$`` and ``%`` numeric references, which plotly displays as
    the characters (it decodes numeric references and only a few named ones, so quotes are
    left as they are: without a ``<`` they make no tag). Bidirectional controls are shown by
    their code point (:func:`show_controls`).
    """
    return html.escape(show_controls(text), quote=False).replace("$", "&#36;").replace("%", "&#37;")
