"""The package's layers: each module imports only its own layer and those below it.

From the ground up: the ground floor (the exceptions, the limits, text shown literally, the
predictions type), the mathematics, the estimators, what runs them (the evaluation and the
clinical validation), reading files, the lab, what is shown, the reports, the command line,
and the app on top. The layers are read from the real import graph, imports inside
functions included (they are dependencies all the same); plotly may be imported when a
module is imported only by the display, the reports and the app, and Streamlit only by the app.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The two packages of the distribution: the compute package and, beside it, the dashboard.
PACKAGES = ("calibdash", "calibdash_app")

# Bottom to top: a module may import its own layer and the layers below it. A module belongs
# to the layer of the longest name here that is it or a package holding it.
LAYERS = (
    ("ground floor", (
        "calibdash",  # the package itself: its names load on first use (PEP 562), so it imports nothing
        "calibdash.errors", "calibdash.limits", "calibdash.text", "calibdash.predictions", "calibdash.deprecation",
        "calibdash.intervals", "calibdash.formatting", "calibdash.params",
    )),
    ("mathematics", ("calibdash.core",)),
    ("estimators", ("calibdash.estimators", "calibdash.metrics")),
    ("evaluation", ("calibdash.evaluation", "calibdash.clinical")),
    ("input", ("calibdash.io",)),
    # the demo data are made through the loader (calibdash.lab.demo -> calibdash.io.loading)
    ("lab", ("calibdash.lab",)),
    ("display", ("calibdash.display",)),
    ("reporting", ("calibdash.reporting",)),
    ("command line", ("calibdash.cli", "calibdash.__main__", "calibdash.serve")),
    ("app", ("calibdash_app",)),  # a package of its own: nothing in calibdash imports Streamlit
)
# Upward imports allowed for now, as "importer -> imported": none.
EXCEPTIONS = frozenset()
# The layers whose modules may import plotly when they are imported (the figures and what
# draws them; elsewhere only inside a function), and the layer that may import Streamlit.
PLOTLY_LAYERS = ("display", "reporting", "app")
STREAMLIT_LAYERS = ("app",)


def layer_of(module, layers=LAYERS):
    """The index in ``layers`` of ``module`` (a dotted name), or None when no layer holds it.
    The package itself holds only itself: its modules each have their place."""
    best, found = -1, None
    for i, (_, names) in enumerate(layers):
        for name in names:
            if (module == name or (name != "calibdash" and module.startswith(name + "."))) and len(name) > best:
                best, found = len(name), i
    return found


def module_name(path, root):
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path, root):
    """``(line, imported name, at import time)`` of every import in ``path``: calibdash
    modules by their dotted name (``from calibdash.x import y`` names calibdash.x.y when that
    is a module), anything else by its top-level package. At import time: not inside a
    function (a class body or an ``if`` at the top runs when the module is imported)."""
    this = module_name(path, root)
    package = this if path.name == "__init__.py" else this.rpartition(".")[0]
    found = []

    def visit(node, deferred):
        for child in ast.iter_child_nodes(node):
            inside = deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((child.lineno, alias.name, not inside) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in child.names:
                    sub = f"{base}.{alias.name}"
                    is_module = (root / Path(*sub.split("."))).with_suffix(".py").exists() or \
                        (root / Path(*sub.split(".")) / "__init__.py").exists()
                    found.append((child.lineno, sub if is_module else base, not inside))
            visit(child, inside)

    visit(ast.parse(path.read_text(), filename=str(path)), False)
    return [(line, name if name.split(".")[0] in PACKAGES else name.split(".")[0], now) for line, name, now in found]


def graph(root=ROOT):
    """Every module of :data:`PACKAGES` under ``root`` -> its imports, as :func:`imports` gives them."""
    return {module_name(p, root): imports(p, root) for package in PACKAGES for p in sorted((root / package).rglob("*.py"))}


def unplaced(graph, layers=LAYERS):
    return sorted(m for m in graph if layer_of(m, layers) is None)


def upward_imports(graph, layers=LAYERS, exceptions=EXCEPTIONS):
    """``importer:line imports name (from layer to layer)`` for each import of a higher layer."""
    out = []
    for module, found in sorted(graph.items()):
        own = layer_of(module, layers)
        for line, name, _ in found:
            theirs = layer_of(name, layers) if name.split(".")[0] in PACKAGES else None
            if own is not None and theirs is not None and theirs > own and f"{module} -> {name}" not in exceptions:
                out.append(f"{module}:{line} imports {name} (from {layers[own][0]} up to {layers[theirs][0]})")
    return out


def ui_imports(graph, layers=LAYERS):
    """Imports of plotly when a module outside :data:`PLOTLY_LAYERS` is imported, and of
    Streamlit anywhere outside :data:`STREAMLIT_LAYERS`."""
    out = []
    for module, found in sorted(graph.items()):
        own = layer_of(module, layers)
        if own is None:
            continue  # test_every_module_has_a_layer names it
        for line, name, now in found:
            if name == "plotly" and now and layers[own][0] not in PLOTLY_LAYERS:
                out.append(f"{module}:{line} imports plotly when it is imported")
            if name == "streamlit" and layers[own][0] not in STREAMLIT_LAYERS:
                out.append(f"{module}:{line} imports streamlit")
    return out


def app_imports(graph, layers=LAYERS):
    """Imports of calibdash_app from outside its layer."""
    app = layer_of("calibdash_app", layers)
    return [f"{module}:{line} imports {name}" for module, found in sorted(graph.items()) for line, name, _ in found
            if layer_of(name, layers) == app and name.split(".")[0] == "calibdash_app" and layer_of(module, layers) != app]


@pytest.mark.slow
def test_every_module_has_a_layer():
    assert not unplaced(graph()), "modules in no layer (add them to LAYERS):\n" + "\n".join(unplaced(graph()))


@pytest.mark.slow
def test_no_module_imports_a_higher_layer():
    found = upward_imports(graph())
    assert not found, "imports of a higher layer:\n" + "\n".join(found)


@pytest.mark.slow
def test_the_compute_modules_import_neither_plotly_nor_streamlit():
    found = ui_imports(graph())
    assert not found, "\n".join(found)


@pytest.mark.slow
def test_nothing_below_the_app_imports_it():
    found = app_imports(graph())
    assert not found, "\n".join(found)


def test_the_checks_can_fail(tmp_path):
    # a made-up package with one of each violation, and an allowed import of each kind
    pkg, app = tmp_path / "calibdash", tmp_path / "calibdash_app"
    for sub in ("core", "io", "display"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    app.mkdir()
    (app / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "errors.py").write_text("")
    (pkg / "core" / "risk.py").write_text("from calibdash.errors import x\n\n\ndef f():\n    from calibdash.display import plots\n")
    (pkg / "io" / "loading.py").write_text("import plotly.graph_objects\nfrom .. import errors\n\n\ndef g():\n    import plotly\n")
    (pkg / "display" / "plots.py").write_text("import plotly\nfrom calibdash_app import jobs\nimport streamlit as st\n")
    (app / "page.py").write_text("import streamlit\nfrom calibdash.display import plots\n")
    (pkg / "cli.py").write_text("import plotly\n")
    (pkg / "stray.py").write_text("")
    g = graph(tmp_path)
    assert g["calibdash.io.loading"] == [(1, "plotly", True), (2, "calibdash.errors", True), (6, "plotly", False)]
    assert unplaced(g) == ["calibdash.stray"]
    assert upward_imports(g) == [
        "calibdash.core.risk:5 imports calibdash.display.plots (from mathematics up to display)",
        "calibdash.display.plots:2 imports calibdash_app (from display up to app)",
    ]
    assert upward_imports(g, exceptions={"calibdash.core.risk -> calibdash.display.plots"}) == [
        "calibdash.display.plots:2 imports calibdash_app (from display up to app)"]
    assert ui_imports(g) == ["calibdash.cli:1 imports plotly when it is imported",
                             "calibdash.display.plots:3 imports streamlit",
                             "calibdash.io.loading:1 imports plotly when it is imported"]
    assert app_imports(g) == ["calibdash.display.plots:2 imports calibdash_app"]
    assert layer_of("calibdash_app.jobs") == layer_of("calibdash_app") == len(LAYERS) - 1
    assert layer_of("calibdash_apple") is None and layer_of("calibdash.x") is None
    assert layer_of("calibdash.textual") is None and layer_of("calibdash.text") == 0
