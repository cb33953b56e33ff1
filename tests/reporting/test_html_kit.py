"""The parts both HTML reports are built of (calibdash.reporting.html_kit): escaping, the missing
number, tables and their attributes, figures, the document shell, the rerun sentence."""

import html
import re

import numpy as np
import pandas as pd
import pytest

from calibdash.errors import InputError
from calibdash.reporting import html_kit as kit
from calibdash.reporting.references import REFERENCES

HOSTILE = ['<script>alert("x")</script>', "=cmd|' /C calc'!A0", "a & b", '"><img src=x onerror=alert(1)>']


def _unescaped(doc):
    """The characters that must not stand raw in text or in a quoted attribute."""
    return [c for c in "<>\"'" if c in doc]


@pytest.mark.parametrize("text", HOSTILE)
def test_escape_keeps_the_text_and_leaves_no_markup(text):
    out = kit.escape(text)
    assert html.unescape(out) == text
    assert not _unescaped(out)
    assert kit.escape(3) == "3" and kit.escape(None) == "None"


@pytest.mark.parametrize("text", HOSTILE)
def test_every_text_place_is_escaped(text):
    docs = [
        kit.text_table([text], [[text]], titles={text: text}, data=text),
        kit.frame_table(pd.DataFrame({text: [text]}), numeric=(text,), data=text),
        kit.kv_table([(text, "<b>html</b>")]).replace("<b>html</b>", ""),
        kit.text_kv_table([(text, text)]),
        kit.details(text, text),
    ]
    for doc in docs:
        assert text not in doc and kit.escape(text) in doc
        # every tag left is one the kit wrote
        assert not _unescaped(re.sub(r"<(/?)(table|thead|tbody|tr|th|td|details|summary|pre)( [a-z-]+=\"[^\"<>]*\")*>", "", doc))


def test_cells_of_table_and_kv_table_are_html_and_of_the_text_versions_text():
    assert "<td><b>bold</b></td>" in kit.table(["h"], [["<b>bold</b>"]])
    assert "<td>&lt;b&gt;bold&lt;/b&gt;</td>" in kit.text_table(["h"], [["<b>bold</b>"]])
    assert kit.kv_table([("k", "<code>x</code>")]) == "<table><tbody><tr><th>k</th><td><code>x</code></td></tr></tbody></table>"
    assert kit.text_kv_table([("k", "<code>x</code>")]) == (
        "<table><tbody><tr><th>k</th><td>&lt;code&gt;x&lt;/code&gt;</td></tr></tbody></table>")


@pytest.mark.parametrize("value", [None, float("nan"), np.nan, np.float64("nan"), float("inf"), -np.inf, pd.NA, "abc",
                                   "<script>"])
def test_a_missing_number_is_the_empty_cell(value):
    assert kit.MISSING == ""
    assert kit.num(value, ".3f") == kit.MISSING
    assert kit.interval(value, 1.0, ".2f") == kit.MISSING and kit.interval(0.5, value, ".2f") == kit.MISSING


def test_numbers_are_formatted():
    assert kit.num(0.123456, ".3g") == "0.123" and kit.num(np.int64(12345), ",.0f") == "12,345"
    assert kit.num("0.25", "g") == "0.25" and kit.num(True, "g") == "1" and kit.num(-0.0, ".2f") == "-0.00"
    assert kit.interval(0.1234, 0.5678, ".2f") == "0.12 to 0.57"
    assert kit.text_table(["x"], [[kit.num(None, ".2f")]], numeric=(0,)) == (
        '<table><thead><tr><th>x</th></tr></thead><tbody><tr><td class="num"></td></tr></tbody></table>')


def test_table_attributes():
    doc = kit.text_table(["name", "value", "p"], [("a", "1.5", "0.2"), ("b", "2", "")], numeric=(1, 2),
                         titles={"value": 'the "value" <here>'}, data="my-table")
    assert doc.startswith('<table data-table="my-table"><thead><tr><th>name</th>'
                          '<th title="the &quot;value&quot; &lt;here&gt;">value</th><th>p</th></tr></thead>')
    assert '<tr><td>a</td><td class="num">1.5</td><td class="num">0.2</td></tr>' in doc
    assert '<tr><td>b</td><td class="num">2</td><td class="num"></td></tr>' in doc
    assert kit.table(["h"], []).startswith("<table><thead>")  # no data attribute unless named
    frame = pd.DataFrame({"metric": ["O:E"], "estimate": ["1.02"], "note": [""]})
    doc = kit.frame_table(frame, numeric=("estimate",), data="t", titles={"metric": "what"})
    assert doc == ('<table data-table="t"><thead><tr><th title="what">metric</th><th>estimate</th><th>note</th></tr>'
                   '</thead><tbody><tr><td>O:E</td><td class="num">1.02</td><td></td></tr></tbody></table>')


def test_details_and_reference_link():
    assert kit.details("BibTeX", "@misc{a,\n}") == "<details><summary>BibTeX</summary><pre>@misc{a,\n}</pre></details>"
    ref = next(r for r in REFERENCES.values() if r.url)
    assert kit.reference_link(ref) == f' <a href="{kit.escape(ref.url)}">{kit.escape(ref.url)}</a>'
    assert kit.reference_link(type("R", (), {"url": ""})()) == ""


def test_figures_carry_plotly_once_and_escape_names_and_captions():
    import plotly.graph_objects as go

    figs = kit.Figures()
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1]))
    first = figs.add(fig, HOSTILE[0], HOSTILE[3])
    second = figs.add(fig, "second", "two")
    assert figs.count == 2
    assert first.count("plotly.js v") == 1 and "plotly.js v" not in second
    assert 'id="cd-fig-1"' in first and 'id="cd-fig-2"' in second
    assert first.startswith(f'<figure class="cd-figure" data-figure="{kit.escape(HOSTILE[3])}">')
    assert f"<figcaption>{kit.escape(HOSTILE[0])}</figcaption></figure>" in first
    assert HOSTILE[0] not in first and HOSTILE[3] not in first


def test_document_shell(tmp_path):
    figs = kit.Figures()
    head = kit.title_block(HOSTILE[0], "Method: <em>this</em>.")
    assert re.fullmatch(r"<h1>&lt;script&gt;alert\(&quot;x&quot;\)&lt;/script&gt;</h1><p class=\"muted\">calibdash \S+, "
                        r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC\. Method: <em>this</em>\.</p>", head)
    path = tmp_path / "r.html"
    doc = kit.document(HOSTILE[0], head, ['<li><a href="#a">A</a></li>'], ['<section id="a">A</section>'], figs, path=path)
    assert path.read_text(encoding="utf-8") == doc
    assert doc.startswith("<!DOCTYPE html>\n") and doc.endswith("</body></html>\n")
    assert f"<style>{kit.CSS}</style>" in doc and '<meta name="calibdash-figures" content="0">' in doc
    assert f"<title>{kit.escape(HOSTILE[0])}</title>" in doc and HOSTILE[0] not in doc
    assert f'{head}<nav><ul><li><a href="#a">A</a></li></ul></nav><section id="a">A</section></body>' in doc
    # offline: the style fetches nothing
    assert "url(" not in kit.CSS and "@import" not in kit.CSS and "@font-face" not in kit.CSS and "//" not in kit.CSS


def test_the_stylesheet_covers_both_reports():
    for rule in (".verdict", ".warn", "ul.verdicts", "li.status-ok", "li.status-problem", "li.status-uncertain",
                 "td.num", "figure.cd-figure", "figcaption", ".muted", "nav ul"):
        assert f"\n{rule} " in kit.CSS, rule


def test_made_by_and_the_rerun_text():
    ways = {"python": "in Python.", "cli": "on <code>r.json</code>.", "app": "from the app."}
    assert kit.rerun_text("cli", "r.json", ways) == "<p>To rerun to the same numbers: on <code>r.json</code>.</p>"
    assert kit.rerun_text("python", None, ways) == "<p>To rerun to the same numbers: in Python.</p>"
    with pytest.raises(InputError, match="made_by must be one of python, cli, app; got 'browser'"):
        kit.rerun_text("browser", "r.json", ways)
    with pytest.raises(InputError, match="needs results_file, the name of the metrics file"):
        kit.rerun_text("app", None, ways, what="metrics file")
    with pytest.raises(InputError, match="the name of the result file"):
        kit.check_made_by("cli", "")
    kit.check_made_by("python", None)
    assert kit.MADE_BY == ("python", "cli", "app")
