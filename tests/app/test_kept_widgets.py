"""Every widget whose value the session keeps is declared through calibdash_app.session.kept.

A kept widget (a key starting with one of KEPT_WIDGETS) declared with a bare ``key=`` loses its
value when a job's polling fragment reruns around a page change (tests/e2e/test_page_state_browser.py
shows it in chromium); ``kept`` adds ``persist_state="session"``. This scans the app's source so
that a new widget cannot forget it.
"""

import ast
from pathlib import Path

import pytest

import calibdash_app
from calibdash_app.session import KEPT_WIDGETS, kept

APP = Path(calibdash_app.__file__).resolve().parent


def assigned_strings(tree):
    """{name: known beginning} of the names the module binds (at any level, tuples unpacked) to a string,
    an f-string or a sum starting with one; a name bound twice keeps a kept widget's key if either is."""
    out = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            for name, value in zip(names, values):
                start = literal_start(value, out)
                if isinstance(name, ast.Name) and start and not out.get(name.id, "").startswith(KEPT_WIDGETS):
                    out[name.id] = start
    return out


def literal_start(node, strings):
    """The known beginning of a key expression: a string, an f-string's first part, or a module constant."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return node.values[0].value
    if isinstance(node, ast.Name):
        return strings.get(node.id, "")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return literal_start(node.left, strings)
    return ""


def walk_outside_functions(tree):
    """The nodes of ``tree`` outside its functions' bodies."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, ast.FunctionDef):
            todo.extend(ast.iter_child_nodes(node))


def bare_kept_keys(source):
    """(line, key) of the calls in ``source`` passing a kept widget's key as a bare ``key=``; a name is
    looked up in its function (a parameter there hides the module's name), then in the module."""
    tree = ast.parse(source)
    module = assigned_strings(ast.Module(body=[n for n in tree.body if not isinstance(n, ast.FunctionDef)],
                                         type_ignores=[]))
    found = set()
    scopes = [(tree, module)] + [(f, {**{a.arg: "" for a in f.args.args + f.args.kwonlyargs}, **assigned_strings(f)})
                                 for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)]
    for scope, names in scopes:
        strings = {**module, **names} if scope is not tree else module
        for node in walk_outside_functions(tree) if scope is tree else ast.walk(scope):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg == "key" and literal_start(kw.value, strings).startswith(KEPT_WIDGETS):
                        found.add((node.lineno, ast.unparse(kw.value)))
    return sorted(found)


def test_the_scan_finds_a_bare_kept_key():
    # the scan itself: a bare key is found in each form the app writes keys in, kept(...) is not
    source = '''
SEED_KEY = "view__seed"
st.number_input("Seed", key="cfg__seed")
st.slider("Bins", key=f"rel__bins_{notion}")
st.toggle("On", key=SEED_KEY)
st.text_input("Grid", key="view__plan_" + name)
for notion in notions:
    key = f"cfg__est__{notion}"
    st.multiselect("Estimators", key=key)
st.radio("Notion", **kept("view__notion"))
st.button("Run", key="run")
def group_widget(key):
    st.selectbox("Group", key=key)  # a parameter: not the module's key above
'''
    assert [line for line, _ in bare_kept_keys(source)] == [3, 4, 5, 6, 9]


def test_every_kept_widget_of_the_app_uses_kept():
    found = {}
    for path in sorted(APP.rglob("*.py")):
        bare = bare_kept_keys(path.read_text())
        if bare:
            found[str(path.relative_to(APP))] = bare
    assert not found, f"declare these widgets with **kept(key) (calibdash_app.session.kept): {found}"


def test_kept_refuses_a_key_the_session_does_not_keep():
    assert kept("view__lab_seed") == {"key": "view__lab_seed", "persist_state": "session"}
    with pytest.raises(ValueError, match="not a kept widget's key"):
        kept("lab_seed")
