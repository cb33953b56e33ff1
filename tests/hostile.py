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


# -- small files that declare gigabytes (issue 28) ---------------------------------------
def long_texts_parquet(path, *, dictionary=True):
    """A Parquet file of a few KB (2.6 KB dictionary-encoded, 36 KB plain) holding 200 labels of
    5 MB each: 1 GB of text once decoded."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"p": np.linspace(0.01, 0.99, 200), "y": ["a" * 5_000_000] * 200}), path,
                   compression="zstd", use_dictionary=dictionary)
    return path


def declared_npz(path, n=11_000_000, d=12):
    """A .npz of about 1.5 MB whose probabilities declare shape (n, d) of float64 (1.06 GB by
    default): zeros, written as a stream of compressed chunks; int8 labels beside them."""
    import io
    import zipfile

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (n, d)})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("probs.npy", "w", force_zip64=True) as f:
            f.write(header.getvalue())
            chunk = bytes(2**22)
            for _ in range(n * d * 8 // len(chunk)):
                f.write(chunk)
            f.write(bytes(n * d * 8 % len(chunk)))
        labels = io.BytesIO()
        np.save(labels, np.zeros(n, np.int8))
        z.writestr("labels.npy", labels.getvalue())
    return path
