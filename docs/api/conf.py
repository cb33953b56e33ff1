"""Sphinx configuration of calibdash's API reference (built offline from the docstrings).

Build from the project root:

    .venv/bin/python -m sphinx -W --keep-going -b html docs/api docs/_build/html

(-W: a warning fails the build; --keep-going: all of them are listed first.) The module
pages are generated into docs/api/generated/ (git-ignored, like docs/_build/).

Nothing is fetched from the network: no intersphinx, the built-in ``alabaster`` theme.
"""

import importlib
import inspect
import sys
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# The compute package must import without streamlit (only the dashboard, calibdash_app, uses
# it): make any ``import streamlit`` fail, so that a stray import breaks this build.
sys.modules["streamlit"] = None

import calibdash  # noqa: E402

project = "calibdash"
author = "the calibdash authors"
release = version = calibdash.__version__
copyright = "calibdash authors"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",  # renders the numpydoc sections (Parameters, Returns, Attributes, ...)
    "sphinx.ext.viewcode",
]

templates_path = ["_templates"]
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path = []
html_theme_options = {"description": "Estimate how miscalibrated a classifier is, with honest error bars."}

autosummary_generate = True
autosummary_generate_overwrite = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "member-order": "bysource", "show-inheritance": True}
autodoc_typehints = "none"  # the numpydoc sections give the types
autodoc_preserve_defaults = True

numpydoc_show_class_members = False  # autodoc documents the members; no second table
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False  # types are prose ("array of shape (n, d)"), not references

# Types in the docstrings are prose; only explicit roles (:func:, :class:, ...) are links.
nitpicky = False

# autosummary's one-line summaries end at the first ". "; the docstrings cite the paper as
# "Eq. 10", "Sec. 5.1", "App. B", which must not end a sentence.
import sphinx.ext.autosummary as _autosummary  # noqa: E402

_autosummary.WELL_KNOWN_ABBREVIATIONS = tuple(_autosummary.WELL_KNOWN_ABBREVIATIONS) + ("Eq.", "Eqs.", "Sec.", "App.", "Fig.")


class CalibdashExports(SphinxDirective):
    """A summary table of the names ``import calibdash`` offers, read from ``calibdash._EXPORTS``
    (so the page cannot fall out of step with the package), each linked to where it is defined."""

    has_content = False

    def run(self):
        functions, data = [], []
        for name, module in sorted(calibdash._EXPORTS.items(), key=lambda kv: kv[0].lower()):
            obj = getattr(importlib.import_module(module), name)
            if inspect.isclass(obj) or callable(obj):
                # relative to the current module (calibdash), as autosummary wants
                functions.append(f"   ~{module.removeprefix('calibdash.')}.{name}")
            else:  # a constant: its type's docstring would say nothing about it
                data.append(f"* ``{name}``: from :mod:`{module}`")
        lines = [".. autosummary::", "", *functions, "", "Constants:", "", *data]
        node = nodes.container()
        self.state.nested_parse(StringList(lines, source="calibdash._EXPORTS"), self.content_offset, node)
        return node.children


def setup(app):
    app.add_directive("calibdash-exports", CalibdashExports)
