"""Hostile text for the tests of calibdash.display.text and of every page that shows user text.

Markdown images and links, LaTeX ``\\href`` and HTML, as an attacker would put them in a
shared file's class names, column names, file name or cells. Every address is
127.0.0.1:9 (the discard port: nothing answers there) or, where a file name cannot hold a
"/", a relative one containing the word "hostile", so that a test can tell any request,
link or image that came from this text.
"""

import numpy as np
import pandas as pd

from calibdash.lab.simulation import dirichlet_simulation

IMAGE_AND_LINK = "![warn](http://127.0.0.1:9/absent-class.png) [Session expired - log in again](http://127.0.0.1:9/phish)"
LATEX = r"$\href{http://127.0.0.1:9/x}{click}$"
HTML = '<img src=http://127.0.0.1:9/h.png> <a href="http://127.0.0.1:9/plot">plotly link</a>'
# Three class names (the probability simplex is drawn for three classes).
CLASSES = (IMAGE_AND_LINK, LATEX, HTML)
# A cell that is not a number: the loader's message quotes it.
CELL = "![cell](http://127.0.0.1:9/cell.png) <a href=http://127.0.0.1:9/a>x</a> $\\href{http://127.0.0.1:9/c}{c}$"
# File names cannot hold "/": relative addresses marked with "hostile" instead.
FILE_NAMES = (
    r"![pic](hostile-pic.png) [Session expired - log in again](hostile-login) $\href{hostile-tex}{click}$ <img src=hostile-img.png>.csv",
    r"[Download the update](hostile-update) ![x](hostile-x.png) $\href{hostile-2}{here}$ <b>bold <a href='hostile-a'>link.csv",
)
# What else Streamlit rewrites in text: shortcodes, colour directives, typographic arrows,
# autolinks of bare addresses, emphasis, code, entities, a list marker, a table row.
OTHERS = (
    ":material/warning: :streamlit: :smile: :red[red text] :blue-background[x]",
    "a -> b <- c <-> d -- e >= f <= g ~= h",
    "http://127.0.0.1:9/auto www.example.com me@example.com <http://127.0.0.1:9/angle>",
    "**bold** _it_ ~~strike~~ `code` ``two`` # h &amp; &lt;b&gt; \\ back\\slash",
    "1. list",
    "- item",
    "> quote",
    "x | y | z",
    "[ref]: http://127.0.0.1:9/r",
    "x:material/y and :material/z",
    "  spaced  ",
    "`",
)
ALL = CLASSES + (CELL,) + FILE_NAMES + OTHERS


def hostile_csv(n=1000, seed=3, sharpen=1.0, absent=True):
    """A CSV of three classes named by CLASSES, with string labels; with ``absent`` the first
    class never occurs (so the Data page warns about it, quoting its name)."""
    sim = dirichlet_simulation(n=n, n_classes=3, random_state=seed)
    P = sim.probs ** sharpen
    P /= P.sum(axis=1, keepdims=True)
    y = np.where(sim.labels == 0, 1, sim.labels) if absent else sim.labels
    df = pd.DataFrame(P, columns=list(CLASSES))
    df["label"] = [CLASSES[k] for k in y]
    return df.to_csv(index=False).encode()
