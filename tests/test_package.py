"""The package's shape: it installs and imports cheaply, its modules keep to their public
interfaces, and its import graph has no cycle."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "calibdash"


def module_name(path):
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def package_modules():
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path, modules):
    """(line, imported module, names) of every import of a calibdash module in ``path``,
    at any depth (imports inside functions count: they are still dependencies)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    this = module_name(path)
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "calibdash":
                    out.append((node.lineno, alias.name, [], alias.asname or alias.name.split(".")[0]))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = this.split(".") if is_package else this.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "calibdash":
                continue
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                if sub in modules:  # "from calibdash.x import module"
                    out.append((node.lineno, sub, [], alias.asname or alias.name))
                else:
                    out.append((node.lineno, module, [alias.name], None))
    return out


def private_uses(path, modules):
    """Underscore names of other calibdash modules that ``path`` imports or reads."""
    tree = ast.parse(path.read_text(), filename=str(path))
    this = module_name(path) if path.is_relative_to(PACKAGE) else None
    found = []
    bound = {}
    for line, module, names, binding in imports_of(path, modules):
        if module == this:
            continue
        for name in names:
            if name.startswith("_") and not name.startswith("__"):
                found.append(f"{path.relative_to(ROOT)}:{line} imports {module}.{name}")
        if binding:
            bound[binding] = module
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} reads {bound[node.value.id]}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names():
    modules = package_modules()
    users = list(modules.values()) + [ROOT / "app.py", ROOT / "ui.py"] + sorted((ROOT / "app_pages").glob("*.py"))
    found = [use for path in users for use in private_uses(path, modules)]
    assert not found, "private names used across modules:\n" + "\n".join(found)


def test_the_import_graph_has_no_cycle():
    modules = package_modules()
    graph = {}
    for name, path in modules.items():
        deps = set()
        for _, module, _, _ in imports_of(path, modules):
            # a package's own submodules and the package itself are not dependencies of it
            if module != name and not module.startswith(name + ".") and module in modules:
                deps.add(module)
        graph[name] = deps
    # a module depends on the packages above it only through their __init__, which must
    # not import it back: edges to an ancestor package count like any other
    state, stack, cycles = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == "open":
                cycles.append(" -> ".join(stack[stack.index(dep):] + [dep]))
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_checks_above_can_fail(tmp_path):
    # the checkers see a private import and a cycle in a made-up package
    global ROOT, PACKAGE
    old = ROOT, PACKAGE
    pkg = tmp_path / "calibdash"
    (pkg / "a").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "__init__.py").write_text("")
    (pkg / "a" / "x.py").write_text("from calibdash.a.y import _hidden\n")
    (pkg / "a" / "y.py").write_text("from calibdash.a import x\n_hidden = 1\nx._z\n")
    try:
        ROOT, PACKAGE = tmp_path, pkg
        modules = package_modules()
        assert private_uses(pkg / "a" / "x.py", modules) == ["calibdash/a/x.py:1 imports calibdash.a.y._hidden"]
        assert private_uses(pkg / "a" / "y.py", modules) == ["calibdash/a/y.py:3 reads calibdash.a.x._z"]
        try:
            test_the_import_graph_has_no_cycle()
        except AssertionError as e:
            assert "calibdash.a.x -> calibdash.a.y -> calibdash.a.x" in str(e)
        else:
            raise AssertionError("the cycle was not found")
    finally:
        ROOT, PACKAGE = old


def test_import_calibdash_loads_neither_plotly_nor_streamlit():
    code = ("import sys, calibdash; calibdash.evaluate; calibdash.load_predictions; "
            "print(sorted(m for m in ('plotly', 'streamlit') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_public_name_resolves():
    import calibdash

    for name in calibdash.__all__:
        assert getattr(calibdash, name) is not None, name
    assert "evaluate" in dir(calibdash)


def test_the_lab_exposes_its_studies():
    import calibdash
    from calibdash.lab import studies

    assert set(calibdash.lab.__all__) == set(studies.__all__)
    assert calibdash.lab.scenario is studies.scenario and "figure1" in dir(calibdash.lab)
