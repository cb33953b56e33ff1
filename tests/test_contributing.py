"""CONTRIBUTING.md's worked example works as written: a new family added by its module and
its registry entry alone is run by the pipeline, parsed by the command line, named in
figures and cited by the report. And the map of the code, docs/architecture.md, stays true:
every path it (or CONTRIBUTING.md) names exists, and it names every module of the package."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CHECK = """
import os
import numpy as np
import calibdash as cd
assert os.path.dirname(os.path.dirname(cd.__file__)) == os.getcwd(), cd.__file__  # the copy, not the checkout
from calibdash.cli import parse_grid_option
from calibdash.display.plots import parameter_words
from calibdash.estimators.registry import REGISTRY, available_estimators
from calibdash.lab.simulation import dirichlet_simulation
from calibdash.reporting.references import reference_keys

assert "knn" in available_estimators("top-label") and "knn" in available_estimators("classwise")
assert "knn" not in available_estimators("canonical")
assert parse_grid_option(["knn.n_neighbors=20,50"]) == {"knn": {"n_neighbors": [20, 50]}}
assert parameter_words("n_neighbors") == "number of neighbours"
assert reference_keys("knn") == ["gruber2025optimizing"]
sim = dirichlet_simulation(n=1500, n_classes=4, random_state=0)
res = cd.evaluate(sim.probs, sim.labels, notion="top-label", estimators=["bins", "knn"],
                  grids={"knn": {"n_neighbors": [20, 50, 100]}})
row = res.summary.set_index("estimator").loc["knn"]
assert row["params"]["n_neighbors"] in (20, 50, 100) and np.isfinite(row["estimate"]) and row["ci_low"] <= row["ci_high"]
print("ok")
"""


def example_blocks():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    section = text[text.index("### Worked example"):]
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.mark.slow  # copies the package and runs an evaluation in a fresh interpreter
def test_the_worked_example_adds_a_family_with_its_module_and_registry_entry_only(tmp_path):
    module, entry, _usage = example_blocks()
    pkg = tmp_path / "calibdash"
    shutil.copytree(ROOT / "calibdash", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "estimators" / "knn.py").write_text(module)
    # the registry entry, placed as the example says: the import, the parameter, the entry
    imp, rest = entry.split("\n\n", 1)
    param, new_entry = rest.split("\n\n", 1)
    registry = pkg / "estimators" / "registry.py"
    text = registry.read_text()
    anchors = ("from calibdash.estimators.kernel_ridge import", "\n\n# -- default grids", "\n)\n\n#: name -> Entry")
    assert all(text.count(a) == 1 for a in anchors), "the anchors the example is inserted at have changed"
    text = text.replace(anchors[0], imp.strip() + "\n" + anchors[0])
    text = text.replace(anchors[1], "\n" + param.rstrip() + anchors[1])
    text = text.replace(anchors[2], "\n" + new_entry.rstrip() + anchors[2])
    registry.write_text(text)
    out = subprocess.run([sys.executable, "-c", CHECK], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]


# -- docs/architecture.md stays true to the tree -------------------------------------------
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def doc_paths(text, doc_dir, root=ROOT):
    """The repository paths ``text`` (markdown in ``doc_dir``) names, as paths relative to
    ``root``: every link's target that is not a web address or an anchor (relative to
    ``doc_dir``), and every code span outside links that looks like a path (it contains a
    slash or ends in ``.py`` or ``.md``; relative to ``root``). A span with a space is a
    command, and one with ``<`` or ``*`` a pattern: neither is a path. Fenced blocks are
    left out."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    found = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        target = target.split("#")[0]
        if target and not re.match(r"[a-z]+:", target):
            found.append((doc_dir / target).resolve().relative_to(root.resolve()).as_posix())
    outside_links = re.sub(r"\[[^\]]*\]\([^)]*\)", "", text)
    for span in re.findall(r"`([^`\n]+)`", outside_links):
        if (" " in span or "<" in span or "*" in span or span.startswith("-")
                or not ("/" in span or span.endswith((".py", ".md")))):
            continue
        found.append(span.rstrip("/"))
    return found


def missing_paths(text, doc_dir, root=ROOT):
    """The paths ``text`` names that do not exist under ``root``."""
    return sorted({p for p in doc_paths(text, doc_dir, root) if not (root / p).exists()})


def unmentioned_modules(text, doc_dir, root=ROOT):
    """The modules of ``root/calibdash`` and ``root/calibdash_app`` that ``text`` names neither by
    their file's path nor, for a package's ``__init__.py``, by the package's folder."""
    named = {p.rstrip("/") for p in doc_paths(text, doc_dir, root)}
    out = []
    for path in sorted(p for package in ("calibdash", "calibdash_app") for p in (root / package).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel not in named and not (path.name == "__init__.py" and path.parent.relative_to(root).as_posix() in named):
            out.append(rel)
    return out


def test_the_architecture_page_names_only_paths_that_exist():
    missing = missing_paths(ARCHITECTURE.read_text(), ARCHITECTURE.parent)
    assert not missing, "docs/architecture.md names paths that do not exist:\n" + "\n".join(missing)


def test_the_architecture_page_names_every_module():
    missing = unmentioned_modules(ARCHITECTURE.read_text(), ARCHITECTURE.parent)
    assert not missing, "modules docs/architecture.md does not name (add them to its tables):\n" + "\n".join(missing)


def test_contributing_names_only_paths_that_exist():
    # besides the file its worked example creates
    missing = set(missing_paths((ROOT / "CONTRIBUTING.md").read_text(), ROOT)) - {"calibdash/estimators/knn.py"}
    assert not missing, "CONTRIBUTING.md names paths that do not exist:\n" + "\n".join(sorted(missing))


def test_the_path_checks_can_fail(tmp_path):
    (tmp_path / "calibdash" / "core").mkdir(parents=True)
    for name in ("__init__.py", "errors.py", "core/__init__.py", "core/risk.py", "core/gone.py"):
        (tmp_path / "calibdash" / name).write_text("")
    (tmp_path / "docs").mkdir()
    text = ("[risk](../calibdash/core/risk.py), [the core](../calibdash/core/), [a web page](https://example.org/x.py), "
            "[an anchor](#layers), [stale](../calibdash/core/old.py#L1), `calibdash/errors.py`, `calibdash/lost.py`, "
            "`moved.md`, `streamlit run app.py`, `tests/<subpackage>/test_<module>.py`, `calibdash.core.risk`, "
            "[`calibdash/core/risk.py`](../calibdash/core/risk.py)\n```\ncalibdash/in_a_diagram.py\n`calibdash/fenced.py`\n```\n")
    assert missing_paths(text, tmp_path / "docs", tmp_path) == ["calibdash/core/old.py", "calibdash/lost.py", "moved.md"]
    # the package's own __init__.py and core/gone.py are named nowhere; core/__init__.py by its folder
    assert unmentioned_modules(text, tmp_path / "docs", tmp_path) == ["calibdash/__init__.py", "calibdash/core/gone.py"]
