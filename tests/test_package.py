"""The package's shape: it installs and imports cheaply, its modules keep to their public
interfaces, and its import graph has no cycle."""

from __future__ import annotations

import ast
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "calibdash"
# The dashboard: a package of its own beside the compute package (which never imports Streamlit).
APP = ROOT / "calibdash_app"
# The top-level names of the two packages of the distribution.
TOPS = ("calibdash", "calibdash_app")


def module_name(path):
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def package_modules():
    """Every module of both packages, the dashboard's page scripts included."""
    return {module_name(p): p for package in (PACKAGE, APP) for p in sorted(package.rglob("*.py"))}


def imports_of(path, modules):
    """(line, imported module, names) of every import of a calibdash or calibdash_app module in ``path``,
    at any depth (imports inside functions count: they are still dependencies)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    this = module_name(path)
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in TOPS:
                    out.append((node.lineno, alias.name, [], alias.asname or alias.name.split(".")[0]))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = this.split(".") if is_package else this.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] not in TOPS:
                continue
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                if sub in modules:  # "from calibdash.x import module"
                    out.append((node.lineno, sub, [], alias.asname or alias.name))
                else:
                    out.append((node.lineno, module, [alias.name], None))
    return out


def private_uses(path, modules):
    """Underscore names of other calibdash or calibdash_app modules that ``path`` imports or reads."""
    tree = ast.parse(path.read_text(), filename=str(path))
    this = module_name(path) if path.is_relative_to(PACKAGE) or path.is_relative_to(APP) else None
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


def test_the_checks_below_see_the_dashboard():
    # its modules, entry script and page scripts, and the imports between them
    modules = package_modules()
    assert {"calibdash_app.session", "calibdash_app.main", "calibdash_app.app_pages.compare"} <= set(modules)
    imported = {module for _, module, _, _ in imports_of(modules["calibdash_app.app_pages.compare"], modules)}
    assert {"calibdash_app.data", "calibdash_app.runs"} <= imported, imported


@pytest.mark.slow
def test_no_module_uses_another_modules_private_names():
    modules = package_modules()
    users = list(modules.values()) + [ROOT / "app.py"]
    found = [use for path in users for use in private_uses(path, modules)]
    assert not found, "private names used across modules:\n" + "\n".join(found)


@pytest.mark.slow
def test_the_import_graph_has_no_cycle():
    modules = package_modules()
    graph = {}
    for name, path in modules.items():
        own_ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        deps = set()
        for _, module, _, _ in imports_of(path, modules):
            # Importing a.b.c runs the __init__ of a and a.b first: those are dependencies too,
            # except the module's own ancestors (already being imported when it runs).
            parts = module.split(".")
            for target in [".".join(parts[:i]) for i in range(1, len(parts))] + [module]:
                if target != name and target in modules and target not in own_ancestors:
                    deps.add(target)
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
    global ROOT, PACKAGE, APP
    old = ROOT, PACKAGE, APP
    pkg, app = tmp_path / "calibdash", tmp_path / "calibdash_app"
    (pkg / "a").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "__init__.py").write_text("")
    (pkg / "a" / "x.py").write_text("from calibdash.a.y import _hidden\n")
    (pkg / "a" / "y.py").write_text("from calibdash.a import x\n_hidden = 1\nx._z\n")
    (pkg / "b").mkdir()
    (pkg / "b" / "__init__.py").write_text("from calibdash.b import p\n")
    (pkg / "b" / "p.py").write_text("import calibdash.a.x\n")
    try:
        ROOT, PACKAGE, APP = tmp_path, pkg, app
        modules = package_modules()
        assert private_uses(pkg / "a" / "x.py", modules) == ["calibdash/a/x.py:1 imports calibdash.a.y._hidden"]
        assert private_uses(pkg / "a" / "y.py", modules) == ["calibdash/a/y.py:3 reads calibdash.a.x._z"]
        try:
            test_the_import_graph_has_no_cycle()
        except AssertionError as e:
            assert "calibdash.a.x -> calibdash.a.y -> calibdash.a.x" in str(e)
            assert "calibdash.b" not in str(e)  # b imports a, a does not import b
        else:
            raise AssertionError("the cycle was not found")
        (pkg / "a" / "y.py").write_text("from calibdash.b.p import q\n")  # now a.y -> b (its __init__) -> b.p -> a.x
        (pkg / "a" / "x.py").write_text("import calibdash.a.y\n")
        try:
            test_the_import_graph_has_no_cycle()
        except AssertionError as e:
            assert "calibdash.a.x -> calibdash.a.y -> calibdash.b -> calibdash.b.p -> calibdash.a.x" in str(e), str(e)
        else:
            raise AssertionError("the cycle through a package's __init__ was not found")
        # and inside the dashboard, its page scripts included: a page reading a module's underscore name,
        # and a cycle between two of its modules
        (app / "app_pages").mkdir(parents=True)
        (app / "__init__.py").write_text("")
        (app / "app_pages" / "__init__.py").write_text("")
        (app / "data.py").write_text("from calibdash_app import runs\n_demo = 1\n")
        (app / "runs.py").write_text("from calibdash_app.data import _demo\n")
        (app / "app_pages" / "compare.py").write_text("from calibdash_app import data\ndata._demo\n")
        modules = package_modules()
        assert private_uses(app / "runs.py", modules) == ["calibdash_app/runs.py:1 imports calibdash_app.data._demo"]
        assert private_uses(app / "app_pages" / "compare.py", modules) == [
            "calibdash_app/app_pages/compare.py:2 reads calibdash_app.data._demo"]
        try:
            test_the_import_graph_has_no_cycle()
        except AssertionError as e:
            assert "calibdash_app.data -> calibdash_app.runs -> calibdash_app.data" in str(e), str(e)
        else:
            raise AssertionError("the cycle in calibdash_app was not found")
    finally:
        ROOT, PACKAGE, APP = old


@pytest.mark.slow
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


# The settings of the public functions are keyword-only; the data (P, y, the predictions or
# results, and the name for the by-name functions) stay positional.
POSITIONAL = {
    "evaluate": ["P", "y"], "evaluate_notions": ["P", "y"], "compare": ["models", "y"],
    "report": ["results", "predictions"], "comparison_report": ["comparison", "predictions"],
    "load_predictions": ["source", "labels"], "inspect_predictions": ["source", "labels"], "skce": ["P", "y"],
    "calibration_test": ["P", "y"], "ece_kde": ["P", "y"], "ece_by_name": ["name", "P", "y"],
    "ece_bootstrap": ["name", "P", "y"], "variational_error": ["P", "y"], "variational_top_label": ["P", "y"],
    "holdout_loss_gap": ["recalibrator_fitted", "P_test", "y_test"], "risk": ["estimator", "P", "y"],
    "make_estimator": ["name"], "lab.estimates_vs_n": ["scenario"], "lab.coverage_study": ["scenario"],
    "lab.figure1": [], "plan_sample_size": [],
}


def test_settings_are_keyword_only():
    import inspect

    import calibdash
    import calibdash.lab

    for name, positional in POSITIONAL.items():
        owner, _, attr = name.rpartition(".")
        fn = getattr(calibdash.lab if owner else calibdash, attr)
        params = inspect.signature(fn).parameters.values()
        got = [p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
        assert got == positional, (name, got)
        assert all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in params), name


# Scripts that Streamlit runs and nothing imports: the dashboard's pages.
SCRIPTS = "calibdash_app.app_pages."


@pytest.mark.slow
def test_every_module_imports_on_its_own():
    # A cycle through a package's __init__ shows only when a module is the first one imported.
    failures = []
    for name in sorted(n for n in package_modules() if not n.startswith(SCRIPTS)):
        out = subprocess.run([sys.executable, "-c", f"import {name}"], cwd=ROOT, capture_output=True, text=True)
        if out.returncode:
            failures.append(f"{name}: {out.stderr.strip().splitlines()[-1]}")
    assert not failures, "\n".join(failures)


def test_the_code_is_clean_under_ruff():
    # ruff is in the test extra; its rules are in pyproject.toml
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_the_tests_mirror_the_package():
    # tests/<subpackage>/test_<module>.py; besides them only the dashboard's tests (tests/app:
    # calibdash_app), the browser tests and the pinned numbers have folders of their own
    subpackages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    folders = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert "app" in folders and folders - subpackages <= {"app", "e2e", "pinned"}, folders - subpackages
    loose = {p.name for p in (ROOT / "tests").glob("test_*.py")}
    # at the top: the top-level modules' tests (cli, serve, formatting, params) and the package-wide ones
    assert loose <= {"test_cli.py", "test_cli_app.py", "test_cli_validate.py", "test_serve.py", "test_formatting.py",
                     "test_params.py",
                     "test_package.py",
                     "test_pinned.py", "test_contributing.py", "test_hardening.py", "test_layers.py",
                     "test_deprecation.py", "test_readme.py"}, loose


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel `pip wheel` builds, as a user builds it (an isolated build, from a copy so the
    checkout stays clean, without the dependencies)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source, wheels = tmp / "source", tmp / "wheels"
    for package in TOPS:
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "app.py"):
        shutil.copy(ROOT / name, source / name)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(source)],
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    (built,) = wheels.glob("calibdash-*.whl")
    return built


@pytest.mark.slow
def test_the_wheel_holds_the_package_and_the_app_and_no_data_files(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert not [n for n in names if ".data/" in n], "the wheel installs files outside site-packages"
    assert {t for t in tops if not t.endswith(".dist-info")} == set(TOPS), tops  # not the checkout's app.py
    pages = {f"calibdash_app/app_pages/{p.name}" for p in (APP / "app_pages").glob("*.py")}
    assert {"calibdash_app/__init__.py", "calibdash_app/main.py", "calibdash_app/session.py",
            "calibdash_app/jobs.py", "calibdash_app/app_pages/results.py", *pages} <= set(names)


def served_script(pid):
    """The script a ``streamlit run`` process ``pid`` serves, from its command line (Linux's /proc)."""
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    return Path(argv[argv.index("run") + 1])


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads the server's command line in /proc")
def test_the_installed_wheel_serves_its_own_app(wheel, tmp_path):
    # installed outside the checkout, run from elsewhere: the checkout is not importable, the
    # dependencies are those of this environment (its site-packages)
    from tests.e2e.browser import free_port, served

    target, work = tmp_path / "site", tmp_path / "work"
    work.mkdir()
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)],
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-3000:]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), *site.getsitepackages()]),
           "CALIBDASH_CACHE_DIR": str(tmp_path / "cache")}
    code = ("import sys, calibdash; print(calibdash.__file__); "
            "print(sorted(m for m in ('plotly', 'streamlit') if m in sys.modules)); "
            "from calibdash.cli import main; from calibdash.serve import find_app; print(find_app()); main(['--help'])")
    out = subprocess.run([sys.executable, "-c", code], cwd=work, capture_output=True, text=True, env=env)
    lines = out.stdout.splitlines()
    assert lines[0].startswith(str(target)) and lines[1] == "[]", out.stdout + out.stderr
    assert lines[2] == str(target / "calibdash_app" / "main.py"), lines[2]
    assert "evaluate" in out.stdout and "rerun" in out.stdout and " app " in out.stdout.replace("\n", " ")

    # the installed entry script finds its installed pages (st.Page's paths): AppTest runs it and opens a page
    code = ("from streamlit.testing.v1 import AppTest; from calibdash.serve import find_app; "
            "at = AppTest.from_file(str(find_app()), default_timeout=120).run(); assert not at.exception, at.exception; "
            "at.switch_page('app_pages/data.py').run(); assert not at.exception, at.exception; print(at.title[0].value)")
    out = subprocess.run([sys.executable, "-c", code], cwd=work, capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0 and out.stdout.strip().splitlines()[-1] == "Data", out.stdout[-2000:] + out.stderr[-3000:]

    # `calibdash app` serves it: Streamlit's health check answers, and the script served is the installed one
    port = free_port()
    with served([sys.executable, "-m", "calibdash", "app", "--port", str(port)], port, cwd=work, env=env,
                log_path=tmp_path / "app.log", timeout=120) as server:
        # `calibdash app` became the streamlit server (os.execv): same process, its script in <target>
        assert served_script(server.pid) == target / "calibdash_app" / "main.py", (tmp_path / "app.log").read_text()[-3000:]


def imports_streamlit(path):
    """Whether the module at ``path`` imports streamlit (at any depth)."""
    return any(isinstance(node, ast.Import) and any(a.name.split(".")[0] == "streamlit" for a in node.names)
               or isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "streamlit"
               for node in ast.walk(ast.parse(path.read_text())))


@pytest.mark.slow
def test_every_module_is_in_the_api_reference():
    missing = []
    for name, path in package_modules().items():
        parts = name.split(".")
        if parts[0] == "calibdash_app":  # the dashboard's page of the reference: docs/api/app.rst
            parts = ["calibdash", "app", *parts[1:]]
        if len(parts) != 3 or parts[-1].startswith("_"):
            continue  # the package itself, the subpackages (their pages) and private modules
        if imports_streamlit(path):
            continue  # the dashboard's widgets and state: the API reference is built without streamlit
        page = ROOT / "docs" / "api" / f"{parts[1]}.rst"
        listed = page.exists() and any(line.strip() == parts[2] for line in page.read_text().splitlines())
        if not listed:
            missing.append(f"{name} (docs/api/{parts[1]}.rst)")
    assert not missing, "modules missing from the API reference:\n" + "\n".join(missing)


def _lock_tool():
    import importlib.util

    spec = importlib.util.spec_from_file_location("lock_requirements", ROOT / "tools" / "lock_requirements.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_requirements_pin_every_dependency_at_versions_pyproject_allows():
    lock = _lock_tool()
    text = (ROOT / "requirements.txt").read_text()
    assert lock.lock_problems(text, (ROOT / "pyproject.toml").read_text()) == []
    # the check can fail: a dependency dropped, one unpinned, one outside pyproject's range
    broken = text.replace("\nnumpy==", "\n# numpy==").replace("\nscipy==", "\nscipy>=").replace(
        "\nstreamlit==", "\nstreamlit==0.1 # ")
    problems = lock.lock_problems(broken, (ROOT / "pyproject.toml").read_text())
    assert any(p.startswith("numpy is not in the lock") for p in problems)
    assert any(p.startswith("scipy is not pinned") for p in problems)
    assert any(p.startswith("streamlit==0.1 is outside") for p in problems)


def test_requirements_are_what_the_tests_run_with():
    """The lock is the closure of the app's dependency set at the versions installed here (make
    test installs with -c requirements.txt), so a deploy from it runs what the suite validated."""
    expected = _lock_tool().lock_text()
    assert (ROOT / "requirements.txt").read_text() == expected, (
        "requirements.txt differs from this venv's versions of the app's dependency set: "
        "reinstall with `make test` (it installs the pins) or, after changing a dependency, run `make lock`")
    assert imports_streamlit(APP / "session.py") and not imports_streamlit(APP / "jobs.py")
