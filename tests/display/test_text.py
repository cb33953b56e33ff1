"""calibdash.text (re-exported as calibdash.display.text): user text is shown as text, never as markdown, LaTeX, a link or an image.

How Streamlit itself renders the results is checked in the browser
(tests/e2e/test_hostile_browser.py); here: what the helpers write, the marks the loader's
messages carry, and what the figures hold.
"""

import html
import io
import json
import pickle
import re

import numpy as np
import pandas as pd
import pytest

import calibdash as cd
from calibdash import cli
from calibdash import text as display
from calibdash.display import plots
from calibdash.display import reliability as rl
from calibdash.errors import InputError, LoadWarning
from calibdash.lab.simulation import dirichlet_simulation
from calibdash.text import JOINER, code, escape_markdown, markdown, plot_text, split_marked, strip_marks, user

from ..hostile import ALL, CELL, CLASSES, FILE_NAMES

ACTIVE = "\\`*_{}[]()#+-.!|~<>$:&"

# The patterns Streamlit 1.67's markdown renderer applies to the *parsed* text, where a
# backslash escape no longer shows (frontend StreamlitMarkdown bundle and remark-gfm's
# autolink literals): escape_markdown must leave none of them in its output.
STREAMLIT_TEXT_REWRITES = {
    "url autolink": re.compile(r"(https?://|www(?=\.))[-.\w]+", re.I),
    "e-mail autolink": re.compile(r"[-.\w+]+@[-\w]+(?:\.[-\w]+)+"),
    "emoji shortcode": re.compile(r":(?!material/|streamlit:)[\w+-][\w_+-]*:"),
    "streamlit logo": re.compile(r":streamlit:"),
    "material icon": re.compile(r":material[/_]"),
    "typographic arrow": re.compile(r"(^|\s)(<->|->|<-|--|>=|<=|~=)(\s|$)"),
}


def parsed_text(escaped):
    """What markdown's parser makes of escaped text: every backslash escape resolved."""
    return re.sub(r"\\(.)", r"\1", escaped)


def unescaped_active(escaped):
    """Active characters of ``escaped`` that are not backslash-escaped."""
    out, i = [], 0
    while i < len(escaped):
        if escaped[i] == "\\":
            i += 2
            continue
        if escaped[i] in ACTIVE:
            out.append(escaped[i])
        i += 1
    return out


def code_span_text(md):
    """The text of markdown made of code spans and escaped colons, read as CommonMark reads it."""
    out, i = [], 0
    while i < len(md):
        if md.startswith("\\:", i):
            out.append(":")
            i += 2
            continue
        fence = re.match(r"`+", md[i:])
        assert fence, f"not a code span at {i}: {md!r}"
        n = len(fence.group())
        # the span closes at the next run of exactly n backticks
        close = next(m for m in re.finditer(r"`+", md[i + n:]) if len(m.group()) == n)
        body = md[i + n: i + n + close.start()]
        if body.startswith(" ") and body.endswith(" ") and body.strip(" "):
            body = body[1:-1]
        out.append(body)
        i += n + close.end()
    return "".join(out)


def test_the_old_module_re_exports_every_name():
    # calibdash.display.text was the module's home; code that imports it from there still works
    from calibdash.display import text as old

    assert old.__all__ == display.__all__
    assert all(getattr(old, name) is getattr(display, name) for name in display.__all__)


# -- escape_markdown --------------------------------------------------------------------
def test_every_active_character_is_escaped():
    for c in ACTIVE:
        assert escape_markdown(c) == "\\" + c
    for text in ALL:
        escaped = escape_markdown(text)
        assert unescaped_active(escaped) == [], text
        assert parsed_text(escaped).replace(JOINER, "") == text.replace("\n", " ")


def test_plain_words_are_unchanged():
    for text in ["plain words 123", "Cat dog", "naïve café 日本語 Ελληνικά", "it's \"quoted\", isn't it; 50% = ok?"]:
        assert escape_markdown(text) == text
        assert markdown(text) == text


def test_what_streamlit_rewrites_after_parsing_is_broken_by_an_invisible_joiner():
    samples = ["http://127.0.0.1:9/x", "see www.example.com", "me@example.com", ":smile:", ":+1:", ":streamlit:",
               ":material/warning:", "a -> b", "<-> x", "x <-", "a -- b", ">= 1", "x <= 2", "~= 3"]
    for text in samples:
        assert any(p.search(text) for p in STREAMLIT_TEXT_REWRITES.values()), text  # the sample does trigger
        seen = parsed_text(escape_markdown(text))
        for name, pattern in STREAMLIT_TEXT_REWRITES.items():
            assert not pattern.search(seen), (name, text, seen)
    # only there: ordinary colons, hyphens and signs get no joiner
    assert JOINER not in escape_markdown("line 3: a-b, x > 1, kind='logits' (1 - 2)")


def test_line_breaks_become_spaces():
    assert escape_markdown("a\n# b\r\n- c") == "a \\# b \\- c"
    assert code_span_text(code("a\n\nb")) == "a  b"


# -- code ------------------------------------------------------------------------------------
def test_code_spans_show_every_string_exactly():
    for text in ALL:
        md = code(text)
        assert ":material/" not in md  # Streamlit rewrites it in the source, code spans included
        assert code_span_text(md) == text.replace("\n", " "), (text, md)
    assert code("a`b") == "``a`b``"
    assert code("`") == "`` ` ``"
    assert code("  spaced  ") == "`   spaced   `"
    assert code("") == ""


def test_code_of_material_shortcodes_keeps_the_colon_outside_the_span():
    assert code(":material/warning:") == "\\:`material/warning:`"
    assert code("x:material/y") == "`x`\\:`material/y`"


# -- marks -----------------------------------------------------------------------------------
def test_user_text_is_marked_by_f_strings_and_repr_and_nowhere_else():
    name = user("![x](http://h/p.png)")
    message = f"line 3 of {name}, label {user('a')!r} of {[user('p'), user('q')]}"
    assert split_marked(message) == [("line 3 of ", False), ("![x](http://h/p.png)", True), (", label ", False),
                                     ("'a'", True), (" of [", False), ("'p'", True), (", ", False), ("'q'", True),
                                     ("]", False)]
    assert strip_marks(message) == "line 3 of ![x](http://h/p.png), label 'a' of ['p', 'q']"
    assert type(str(name)) is str and str(name) == "![x](http://h/p.png)" and name == "![x](http://h/p.png)"
    assert type(name + "") is str and strip_marks(name + "") == name + ""
    # user text cannot forge or close a mark: its own marker characters are dropped
    forged = user(f"a{display.CLOSE}**b**{display.OPEN}c")
    assert split_marked(f"x {forged} y") == [("x ", False), ("a**b**c", True), (" y", False)]


def test_input_error_keeps_the_wording_and_carries_the_parts():
    e = InputError(f"{user('f.csv')} is empty", internal=True)
    assert str(e) == "f.csv is empty" and e.args == ("f.csv is empty",)
    assert e.parts == (("f.csv", True), (" is empty", False))
    again = pickle.loads(pickle.dumps(e))
    assert (str(again), again.parts, again.internal) == (str(e), e.parts, True)
    w = LoadWarning("absent-class", f"class 0 ('{user('[a](b)')}') never occurs")
    assert w == "class 0 ('[a](b)') never occurs" and w.code == "absent-class"
    assert w.parts == (("class 0 ('", False), ("[a](b)", True), ("') never occurs", False))
    again = pickle.loads(pickle.dumps(w))
    assert (again, again.code, again.parts) == (w, w.code, w.parts)


def test_markdown_shows_user_parts_as_code_and_escapes_the_rest():
    e = InputError(f"line 2 of {user(FILE_NAMES[0])}: {user(CELL)!r} is not a number (0..d-1)")
    md = markdown("Could not read: ", e)
    assert md.startswith("Could not read\\: line 2 of " + code(FILE_NAMES[0]) + "\\: " + code(repr(CELL)))
    assert md.endswith("is not a number \\(0\\.\\.d\\-1\\)")
    assert markdown(user("*x*")) == "`*x*`"
    assert markdown(ValueError("*x*")) == "\\*x\\*"  # an exception without parts: escaped whole


# -- plotly ----------------------------------------------------------------------------------
def test_plot_text_escapes_what_plotly_reads_and_nothing_plotly_cannot_decode():
    for text in ALL:
        shown = plot_text(text)
        assert html.unescape(shown) == text
        assert not set(shown) & set("<>$%")
        # plotly decodes numeric references and only a few named entities (not &quot;)
        assert set(re.findall(r"&([a-z]+);", shown)) <= {"amp", "lt", "gt"}
    assert plot_text("plain words") == "plain words"


def small_predictions(names, n=300, seed=1):
    sim = dirichlet_simulation(n=n, n_classes=len(names), random_state=seed)
    return cd.Predictions(probs=sim.probs, labels=sim.labels, class_names=names, kind="probabilities", source_name="s")


def figure_text(fig):
    return json.dumps(fig.to_plotly_json(), ensure_ascii=False)


@pytest.mark.slow
def test_figures_hold_class_and_model_names_escaped():
    pred = small_predictions(CLASSES)
    tables = rl.per_class_tables(pred.probs, pred.labels, [0, 1, 2], n_resamples=0)
    figures = [plots.per_class_figure(tables, pred.class_names),
               plots.ternary_figure(pred.probs, pred.probs, pred.class_names, labels=pred.labels)]
    for fig in figures:
        text = figure_text(fig)
        for name in CLASSES:
            assert json.dumps(plot_text(name), ensure_ascii=False)[1:-1] in text
            assert "127.0.0.1:9/h.png>" not in text and "<img" not in text and "$\\\\href" not in text
    tables = {name: rl.reliability_table(*rl.top_label(pred.probs, pred.labels)) for name in FILE_NAMES}
    text = figure_text(plots.overlaid_reliability_figure(tables))
    assert "<img" not in text and "<b>" not in text and "$" not in text


# -- the loader and the comparison mark what they quote --------------------------------------
def hostile_csv(n=400, absent=0):
    sim = dirichlet_simulation(n=n, n_classes=3, random_state=3)
    y = np.where(sim.labels == absent, (absent + 1) % 3, sim.labels)
    df = pd.DataFrame(sim.probs, columns=list(CLASSES))
    df["label"] = [CLASSES[k] for k in y]
    return df.to_csv(index=False).encode()


def test_loader_warning_marks_the_class_name_and_the_data_stay_plain():
    pred = cd.load_predictions(hostile_csv(), name=FILE_NAMES[0])
    (absent,) = [w for w in pred.warnings if w.code == "absent-class"]
    assert absent == f"class 0 ('{CLASSES[0]}') never occurs in the labels: its calibration cannot be assessed"
    assert (CLASSES[0], True) in absent.parts
    assert pred.class_names == CLASSES and all(type(c) is str for c in pred.class_names)
    assert pred.source_name == FILE_NAMES[0] and type(pred.source_name) is str
    assert code(CLASSES[0]) in markdown(absent)


def test_loader_error_marks_file_column_and_cell_with_the_same_wording():
    df = pd.DataFrame({"a": ["0.2", "0.5"], "b": ["0.8", CELL], "label": [0, 1]})
    with pytest.raises(InputError) as info:
        cd.load_predictions(df.to_csv(index=False).encode(), name=FILE_NAMES[1])
    e = info.value
    assert str(e) == (f"line 3 of {FILE_NAMES[1]}, column 'b' is {CELL!r}, not a number; class columns must hold "
                      "numbers only. Fix or remove that row.")
    assert [t for t, is_user in e.parts if is_user] == [FILE_NAMES[1], "b", repr(CELL)]


def test_the_command_line_prints_the_plain_message(tmp_path, capsys):
    path = tmp_path / "cells.csv"
    pd.DataFrame({"a": ["0.2", "0.5"], "b": ["0.8", CELL], "label": [0, 1]}).to_csv(path, index=False)
    assert cli.main(["evaluate", str(path), "--quiet", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == f"calibdash: error: line 3 of cells.csv, column 'b' is {CELL!r}, not a number; class columns " \
                  "must hold numbers only. Fix or remove that row.\n"


def test_comparison_errors_mark_model_names():
    P = small_predictions(("a", "b")).probs
    y = small_predictions(("a", "b")).labels
    with pytest.raises(ValueError) as info:
        cd.compare({FILE_NAMES[0]: P, FILE_NAMES[1]: P[:-1]}, y)
    assert isinstance(info.value, InputError)
    assert (repr(FILE_NAMES[1]), True) in info.value.parts
    assert code(repr(FILE_NAMES[1])) in markdown(info.value)


def test_upload_like_file_object_name_is_marked():
    buf = io.BytesIO(b"")
    buf.name = FILE_NAMES[0]
    with pytest.raises(InputError) as info:
        cd.load_predictions(buf)
    assert info.value.parts[0] == (FILE_NAMES[0], True)


def test_long_user_text_is_cut_in_messages_and_kept_whole_elsewhere():
    # Issue 28: a 5 MB label made a 5 MB error message in the app.
    from calibdash.text import CELL_CHARACTERS, CLOSE, OPEN, SHOWN_CHARACTERS, cell

    long = "x" * 5_000_000
    message = f"the file {user('y' * 300)} holds {cell(long)!r} and {user('short')}"
    error = InputError(message)
    assert len(str(error)) < 400
    assert f"{'y' * (SHOWN_CHARACTERS - 1)}\u2026 (300 characters)" in str(error)
    assert f"'{'x' * (CELL_CHARACTERS - 1)}\u2026' (5,000,000 characters)" in str(error)
    assert ("short", True) in error.parts and all(len(text) <= SHOWN_CHARACTERS for text, _ in error.parts)
    assert f"{user('a' * SHOWN_CHARACTERS)}" == f"{OPEN}{'a' * SHOWN_CHARACTERS}{CLOSE}"  # at the limit: whole
    assert str(cell(long)) == long and cell(long) == long  # the value itself is never cut


def test_text_direction_controls_are_shown_not_obeyed():
    # Issue 28: a right-to-left override made "patient<RLO>gnp.csv" display as "patientvsc.png".
    from calibdash.text import show_controls

    name = "patient\u202egnp.csv"
    for shown in (code(name), plot_text(name), escape_markdown(name), markdown(user(name)),
                  markdown(InputError(f"{user(name)} is empty"))):
        assert "\u202e" not in shown and "202E" in shown, shown
    assert show_controls("a\u2066b\u2069c\u200fd") == "a<U+2066>b<U+2069>c<U+200F>d"
    assert show_controls("ordinary ÉTÉ — text") == "ordinary ÉTÉ — text"
