"""The README's Python examples run as written, on the data the package ships (issue 27: the quick
start pointed at ../shared/data, which a new user does not have, and a snippet used ``cd`` unimported)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 2


@pytest.mark.slow
@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_a_readme_example_runs_as_written(number, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a user's own folder: nothing of the checkout's beside it
    exec(compile(BLOCKS[number], f"README.md, Python example {number + 1}", "exec"), {})  # noqa: S102 - raises if it fails
