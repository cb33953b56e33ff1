"""CONTRIBUTING.md's worked example works as written: a new family added by its module and
its registry entry alone is run by the pipeline, parsed by the command line, named in
figures and cited by the report."""

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
