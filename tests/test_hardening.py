"""The hardening cases (issue 17), run as an attacker and a clumsy user would.

Each case of the table is built in a temporary folder and run as ``python -m calibdash`` in
a child process with the folder as its working directory, bounded by a timeout (its whole
process group is killed past it: a hang fails the test and leaves nothing behind) and
measured for peak memory. Every case checks the exit status, that a user-side problem is
one line without a traceback, and that nothing changed in the folder outside ``--out``
(every file, folder and link is compared before and after, by content).

Then: every CSV writer of the project goes through :func:`calibdash.io.export.csv_text`,
and the rerun of a result file whose fields were changed at random (Hypothesis) ends in a
clean refusal, a rerun, or "numbers differ", never a traceback.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import calibdash as cd
from calibdash.lab.simulation import dirichlet_simulation
from tests.hostile import declared_npz, long_texts_parquet

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 60
# The command line's quickest settings: one notion, one estimator, two bin counts, two folds.
FAST = ["--notion", "top-label", "--estimators", "bins", "--grid", "bins.n_bins=5,10", "--others", "none",
        "--folds", "2", "--quiet"]
# Runs the command, then prints the peak resident memory of its children (KiB on Linux).
MEASURE = ("import resource, subprocess, sys; status = subprocess.run(sys.argv[1:]).returncode; "
           "print(f'peak_kib={resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}', file=sys.stderr); "
           "sys.exit(status)")
PEAK = re.compile(r"peak_kib=(\d+)\s*$")


# ----------------------------------------------------------------------------- helpers
class Run:
    def __init__(self, status, stdout, stderr, peak_mb, seconds):
        self.status, self.stdout, self.stderr, self.peak_mb, self.seconds = status, stdout, stderr, peak_mb, seconds


def run(cwd, *args, timeout=TIMEOUT, env=None):
    """``python -m calibdash ARGS`` in ``cwd``: status, output, peak memory (MB) and seconds."""
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), **(env or {})}
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", MEASURE, sys.executable, "-m", "calibdash", *map(str, args)],
                            cwd=cwd, env=environ, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the command and the wrapper
        proc.communicate()
        pytest.fail(f"calibdash {' '.join(map(str, args))} still running after {timeout} s")
    match = PEAK.search(err)
    assert match, err
    return Run(proc.returncode, out, err[: match.start()], int(match.group(1)) / 1024, time.monotonic() - start)


def snapshot(root):
    """{relative path: what is there}: a file's sha256, a link's target, a folder."""
    seen = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                what = ("link", os.readlink(path))
            elif stat.S_ISREG(mode):
                what = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                what = ("dir" if stat.S_ISDIR(mode) else "other",)
            seen[path.relative_to(root).as_posix()] = what
    return seen


def changed(before, after):
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def small_npz(path, seed=0, n=300, dtype=np.float64):
    sim = dirichlet_simulation(n=n, n_classes=3, alpha=0.5, random_state=seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, predictions=sim.probs.astype(dtype), ground_truth=sim.labels)
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Two evaluated files and the result.json of their joint run (read-only for the cases)."""
    base = tmp_path_factory.mktemp("recorded")
    a, b = small_npz(base / "a.npz", 1), small_npz(base / "b.npz", 2)
    result = run(base, "evaluate", a, b, *FAST, "--out", base / "run")
    assert result.status == 0, result.stderr
    return {"a": a, "b": b, "run": json.loads((base / "run" / "result.json").read_text()),
            "single": json.loads((base / "run" / "a" / "result.json").read_text())}


def write_json(path, obj):
    path.write_text(json.dumps(obj))
    return path


def first_result(obj):
    (model,) = obj["models"].values()
    (result,) = model.values()
    return result


# ----------------------------------------------------------------------------- the table
# Each case: (tmp, recorded) -> (arguments, expected status, expected text on stderr or None,
# extra check or None). "out" is the only folder of tmp a run may change.
def _escaping_model_names(tmp, rec):
    obj = json.loads(json.dumps(rec["run"]))
    models = obj["models"]
    obj["models"] = {"../escaped_rel": models["a"], str(tmp / "escaped_abs"): models["b"]}
    path = write_json(tmp / "result.json", obj)

    def check(tmp, result):
        folders = sorted(p.name for p in (tmp / "out").iterdir() if p.is_dir())
        assert len(folders) == 2 and "escaped_rel" in folders, folders
        assert result.stdout.count("identical") == 2
    return ["rerun", path, "--use-recorded-paths", "--out", tmp / "out"], 0, None, check


def _same_file_names(tmp, rec):
    paths = [small_npz(tmp / "a" / "x.npz", 1), small_npz(tmp / "b" / "x.npz", 2), small_npz(tmp / "x-2.npz", 3)]

    def check(tmp, result):
        assert sorted(p.name for p in (tmp / "out").iterdir() if p.is_dir()) == ["x", "x-2", "x-3"]
        models = json.loads((tmp / "out" / "result.json").read_text())["models"]
        assert list(models) == ["x", "x-3", "x-2"]
        inputs = [first_result({"models": {n: m}})["config"]["input"]["predictions"] for n, m in models.items()]
        assert inputs == [str(p.resolve()) for p in paths]
    return ["evaluate", *paths, *FAST, "--out", tmp / "out"], 0, None, check


def _fifo_given(tmp, rec):
    os.mkfifo(tmp / "pipe.csv")
    return ["evaluate", tmp / "pipe.csv", *FAST, "--out", tmp / "out"], 2, "named pipe (FIFO)", None


def _recorded(tmp, rec, where, options=()):
    obj = json.loads(json.dumps(rec["single"]))
    first_result(obj)["config"]["input"]["predictions"] = str(where)
    return ["rerun", write_json(tmp / "result.json", obj), "--use-recorded-paths", *options]


def _fifo_recorded(tmp, rec):
    os.mkfifo(tmp / "pipe.npz")
    return _recorded(tmp, rec, tmp / "pipe.npz"), 2, "is not a regular file", None


def _dev_zero_recorded(tmp, rec):
    def check(tmp, result):
        assert result.peak_mb < 600, result.peak_mb  # refused before reading: no 500 MB buffer
    return _recorded(tmp, rec, "/dev/zero"), 2, "is not a regular file", check


def _passwd_recorded(tmp, rec):
    def check(tmp, result):
        assert "root:" not in result.stderr and "/bin/" not in result.stderr
    return _recorded(tmp, rec, "/etc/passwd"), 2, "the reason is not shown", check


def _secrets_recorded(tmp, rec):
    (tmp / "secrets.csv").write_text("API_KEY_9f8e7d,label\nhunter2,1\n")

    def check(tmp, result):
        assert "API_KEY" not in result.stderr and "hunter2" not in result.stderr
    return _recorded(tmp, rec, tmp / "secrets.csv"), 2, "the reason is not shown", check


def _recorded_without_confirmation(tmp, rec):
    obj = json.loads(json.dumps(rec["single"]))
    first_result(obj)["config"]["input"]["predictions"] = "/etc/\x1b[31mpasswd"

    def check(tmp, result):
        assert "\x1b" not in result.stderr and "\\x1b" in result.stderr
    return ["rerun", write_json(tmp / "result.json", obj)], 2, "--use-recorded-paths", check


def _tampered(edit, expect):
    def case(tmp, rec):
        obj = json.loads(json.dumps(rec["single"]))
        edit(first_result(obj)["config"])
        return ["rerun", write_json(tmp / "result.json", obj), "--predictions", rec["a"]], 2, expect, None
    return case


def _deep_nesting(tmp, rec):
    path = tmp / "result.json"
    path.write_text('{"format": "calibdash.Evaluations", "version": 1, "models": ' + "[" * 10**5 + "]" * 10**5 + "}")
    return ["rerun", path, "--predictions", rec["a"]], 2, "levels of nesting", None


def _numbers_differ(tmp, rec):
    obj = json.loads(json.dumps(rec["single"]))
    table = first_result(obj)["summary"]
    table["data"][0][table["columns"].index("val_risk")] *= 1 + 1e-9
    return ["rerun", write_json(tmp / "result.json", obj), "--predictions", rec["a"]], 1, "differs", None


def _grid(text, expect):
    def case(tmp, rec):
        return ["evaluate", rec["a"], *FAST, "--grid", text, "--out", tmp / "out"], 2, expect, None
    return case


def _formula_names(tmp, rec):
    paths = [small_npz(tmp / "+plus.npz", 1), small_npz(tmp / "=HYPERLINK(1).npz", 2)]

    def check(tmp, result):
        text = (tmp / "out" / "summary.csv").read_text()
        assert "\n'+plus," in text and "\n+plus," not in text
        summary = pd.read_csv(tmp / "out" / "summary.csv")
        assert set(summary["model"]) == {"'+plus", "HYPERLINK-1"}
    return ["evaluate", *paths, *FAST, "--out", tmp / "out"], 0, None, check


def _float16(tmp, rec):
    path = small_npz(tmp / "half.npz", 4, dtype=np.float16)

    def check(tmp, result):
        pred = cd.load_predictions(path)  # read as probabilities, with a note, not as logits
        assert pred.kind == "probabilities" and {"float16", "renormalised"} & {note.code for note in pred.notes}
        assert json.loads((tmp / "out" / "result.json").read_text())
    return ["evaluate", path, *FAST, "--out", tmp / "out"], 0, None, check


def _out_is_the_input_folder(tmp, rec):
    csv = tmp / "summary.csv"
    pred = cd.load_predictions(rec["a"])
    pd.DataFrame(pred.probs, columns=["p0", "p1", "p2"]).assign(label=pred.labels).to_csv(csv, index=False)
    # here --out is the folder itself: the check is that the input is unchanged
    return ["evaluate", csv, *FAST, "--out", tmp], 2, "would replace the input", None


def _part_link(tmp, rec):
    (tmp / "out").mkdir()
    (tmp / "precious.txt").write_text("keep me")
    (tmp / "out" / "summary.csv.part").symlink_to(tmp / "precious.txt")

    def check(tmp, result):
        assert (tmp / "precious.txt").read_text() == "keep me"
        assert (tmp / "out" / "summary.csv.part").is_symlink()
    return ["evaluate", rec["a"], *FAST, "--out", tmp / "out"], 0, None, check


def _report_html_npz(tmp, rec):
    paths = [small_npz(tmp / "a.npz", 1), small_npz(tmp / "report.html.npz", 2)]

    def check(tmp, result):
        assert (tmp / "out" / "report.html").is_file() and (tmp / "out" / "report.html-2" / "report.html").is_file()
        assert not [p for p in (tmp / "out").rglob("*") if p.name.endswith(".part")]
    return ["evaluate", *paths, *FAST, "--out", tmp / "out"], 0, None, check


def _report_html_npz_unwritable(tmp, rec):
    paths = [small_npz(tmp / "a.npz", 1), small_npz(tmp / "report.html.npz", 2)]
    (tmp / "out" / "a").mkdir(parents=True)
    (tmp / "out" / "a" / "report.html").mkdir()  # a file calibdash writes is a folder: refused before any work

    def check(tmp, result):
        assert not [p for p in (tmp / "out").rglob("*") if p.name.endswith(".part")]
        assert result.seconds < 30
    return ["evaluate", *paths, *FAST, "--out", tmp / "out"], 2, "is a directory", check


def _link_out_of_out(tmp, rec):
    (tmp / "elsewhere").mkdir()
    (tmp / "out").mkdir()
    (tmp / "out" / "x").symlink_to(tmp / "elsewhere")
    paths = [small_npz(tmp / "in" / "x.npz", 1), small_npz(tmp / "in" / "y.npz", 2)]
    return ["evaluate", *paths, *FAST, "--out", tmp / "out"], 2, "outside --out", None


CASES = {
    "rerun --out with model names that leave it": _escaping_model_names,
    "three files, two of the same name": _same_file_names,
    "a FIFO on the command line": _fifo_given,
    "a FIFO recorded in result.json": _fifo_recorded,
    "/dev/zero recorded in result.json": _dev_zero_recorded,
    "/etc/passwd recorded in result.json": _passwd_recorded,
    "a secrets CSV recorded in result.json": _secrets_recorded,
    "recorded paths without confirmation": _recorded_without_confirmation,
    "random_state is text": _tampered(lambda c: c["call"].update(random_state="abc"), "random_state"),
    "call is null": _tampered(lambda c: c.update(call=None), "config.call must be an object"),
    "text where a list belongs": _tampered(lambda c: c["call"].update(estimators="bins"), "estimators must be a list"),
    "an unknown key in the call": _tampered(lambda c: c["call"].update(evil=1), "has a field other than"),
    "10^5-deep nesting": _deep_nesting,
    "a changed number": _numbers_differ,
    "50,000,000 bins": _grid("bins.n_bins=50000000", "more bins than the data's 300 rows"),
    "10^4 grid values": _grid("bins.n_bins=" + ",".join(map(str, range(1, 10**4 + 1))), "CALIBDASH_MAX_GRID_VALUES"),
    "10^12 bins": _grid("bins.n_bins=1000000000000", "more bins than"),
    "formula-like file names": _formula_names,
    "float16 probabilities": _float16,
    "--out is the input's folder, the input named summary.csv": _out_is_the_input_folder,
    "a summary.csv.part link in --out": _part_link,
    "an input named report.html.npz": _report_html_npz,
    "a file to write is a folder": _report_html_npz_unwritable,
    "a model folder links out of --out": _link_out_of_out,
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_hardening_case(tmp_path, recorded, case):
    args, status, expect, check = CASES[case](tmp_path, recorded)
    before = snapshot(tmp_path)
    result = run(tmp_path, *args)
    assert result.status == status, (case, result.status, result.stderr[-3000:])
    assert "Traceback" not in result.stderr, result.stderr
    if status == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("calibdash: error: "), result.stderr
    if expect is not None:
        assert expect in result.stderr, result.stderr
    outside = [k for k in changed(before, snapshot(tmp_path)) if not k.startswith("out/") and k != "out"]
    assert not outside, f"written outside --out: {outside}"
    if check is not None:
        check(tmp_path, result)


@pytest.mark.slow
def test_a_150_mb_one_line_csv_is_refused_within_1_gb(tmp_path):
    path = tmp_path / "one_line.csv"
    with open(path, "wb") as f:
        for _ in range(150):
            f.write(b"0.1," * (2**20 // 4))
    result = run(tmp_path, "evaluate", path, *FAST, "--out", tmp_path / "out")
    assert result.status == 2 and "Traceback" not in result.stderr, result.stderr
    assert "(1 line)" in result.stderr and "about" not in result.stderr, result.stderr
    assert "CALIBDASH_MAX_TABLE_COLUMNS" in result.stderr
    assert result.peak_mb < 1024, f"peak memory {result.peak_mb:.0f} MB"
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.parametrize("dictionary", [True, False], ids=["dictionary-encoded", "plain"])
def test_a_small_parquet_file_of_5_mb_texts_is_refused_within_1_gb(tmp_path, dictionary):
    # Issue 28: 200 labels of 5 MB compress to a file of a few KB (2.6 KB dictionary-encoded,
    # 36 KB plain) that pyarrow and pandas expanded to 2 GB before the labels were looked at;
    # the error then quoted the 5 MB cell. Refused from the file's metadata or dictionary now.
    path = long_texts_parquet(tmp_path / "labels.parquet", dictionary=dictionary)
    assert path.stat().st_size < 40_000
    result = run(tmp_path, "evaluate", path, "--prob-columns", "p", "--label-column", "y", *FAST,
                 "--out", tmp_path / "out")
    assert result.status == 2 and "Traceback" not in result.stderr, result.stderr
    assert "CALIBDASH_MAX_TEXT_CHARACTERS" in result.stderr and "'y'" in result.stderr
    assert len(result.stderr) < 2_000  # no cell quoted whole
    assert result.peak_mb < 1024, f"peak memory {result.peak_mb:.0f} MB"
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_small_npz_declaring_1_gb_is_refused_within_1_gb(tmp_path):
    # Issue 28: a 1.5 MB .npz declaring 1 GB of probabilities was accepted after minutes with
    # +4.8 GB: each array was checked alone, as one float64 copy. The loader holds about four.
    path = declared_npz(tmp_path / "declared.npz")  # 11,000,000 x 12 float64: 1.06 GB
    assert path.stat().st_size < 2 * 10**6
    result = run(tmp_path, "evaluate", path, *FAST, "--out", tmp_path / "out")
    assert result.status == 2 and "Traceback" not in result.stderr, result.stderr
    assert "declares shape (11000000, 12) of float64" in result.stderr and "memory budget" in result.stderr
    assert result.peak_mb < 1024, f"peak memory {result.peak_mb:.0f} MB"
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------- CSV writers
def _csv_writers(path):
    """Calls that write CSV other than through csv_text: DataFrame.to_csv and the csv module's writers."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr == "to_csv" or (node.func.attr in ("writer", "DictWriter")
                                               and isinstance(node.func.value, ast.Name) and node.func.value.id == "csv")):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


@pytest.mark.slow
def test_every_csv_writer_goes_through_csv_text():
    sources = [*sorted((ROOT / "calibdash").rglob("*.py")), *sorted((ROOT / "calibdash_app").rglob("*.py")), ROOT / "app.py"]
    export = ROOT / "calibdash" / "io" / "export.py"
    writers = [w for path in sources if path != export for w in _csv_writers(path)]
    assert not writers, "CSV written without calibdash.io.export.csv_text:\n" + "\n".join(writers)
    assert _csv_writers(export), "the check finds nothing: it cannot fail"
    users = [p.relative_to(ROOT).as_posix() for p in sources if "csv_text(" in p.read_text(encoding="utf-8")]
    assert {"calibdash/cli.py", "calibdash_app/app_pages/results.py", "calibdash_app/app_pages/compare.py",
            "calibdash_app/app_pages/learn.py", "calibdash/reporting/validation.py"} <= set(users)


# ----------------------------------------------------------------------------- fuzzing
def _places(obj, prefix=()):
    """Every place in a JSON object: paths of keys and indices (long lists: their first items)."""
    yield prefix
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _places(value, (*prefix, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj[:3]):
            yield from _places(value, (*prefix, i))


def _set(obj, place, value, delete):
    if not place:
        return value
    target = obj
    for key in place[:-1]:
        target = target[key]
    if delete and isinstance(target, dict):
        del target[place[-1]]
    else:
        target[place[-1]] = value
    return obj


@pytest.fixture(scope="module")
def fuzz_base(tmp_path_factory):
    base = tmp_path_factory.mktemp("fuzz")
    data = small_npz(base / "tiny.npz", 5, n=120)
    res = cd.evaluate(cd.load_predictions(data), notion="top-label", estimators=["bins"], grids={"bins": {"n_bins": [5]}},
                      others=[], n_folds=2)
    obj = json.loads(res.to_json())
    return base, data, obj, list(_places(obj))


@pytest.mark.slow
def test_a_result_file_changed_at_random_is_refused_cleanly(fuzz_base, capsys):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from calibdash.cli import main

    base, data, obj, places = fuzz_base
    scalars = st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=20)
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                               max_size=4), max_leaves=8)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(place=st.sampled_from(places), value=values, delete=st.booleans())
    def rerun_changed(place, value, delete):
        edited = _set(json.loads(json.dumps(obj)), place, value, delete)
        path = base / "changed.json"
        path.write_text(json.dumps(edited))
        capsys.readouterr()
        status = main(["rerun", str(path), "--predictions", str(data), "--quiet"])
        err = capsys.readouterr().err
        assert status in (0, 1, 2), (place, value, err)
        assert "Traceback" not in err, (place, value, err)

    rerun_changed()


# ----------------------------------------------------------------------------- the limits, in Python
def test_every_limit_names_its_variable_and_the_variable_changes_it(monkeypatch):
    from calibdash.evaluation.config import check_split, resolve
    from calibdash.evaluation.gridtext import parse_grid_text
    from calibdash.limits import FOLDS, GRID_COMBINATIONS, GRID_VALUES, LIMITS, RESAMPLES

    assert len({limit.variable for limit in LIMITS}) == len(LIMITS)
    values = list(range(1, GRID_VALUES.default + 2))
    refusals = [
        (GRID_VALUES, lambda: resolve("top-label", ["bins"], {"bins": {"n_bins": values}})),
        (GRID_VALUES, lambda: parse_grid_text(",".join(map(str, values)), "n_bins")),
        (GRID_COMBINATIONS, lambda: resolve("top-label", ["ukkr"], {"ukkr": {"lam": list(np.geomspace(1e-6, 1, 200)),
                                                                               "gamma": list(np.geomspace(1e-3, 1e3, 60))}})),
        (FOLDS, lambda: check_split(0.2, FOLDS.default + 1)),
        (RESAMPLES, lambda: cd.ece_bootstrap("ece-15-bins", *_simulated(), n_resamples=RESAMPLES.default + 1)),
        (RESAMPLES, lambda: cd.calibration_test(*_simulated(), method="bootstrap", estimator="unbiased",
                                                n_resamples=RESAMPLES.default + 1)),
    ]
    for limit, call in refusals:
        with pytest.raises(cd.ConfigError, match=limit.variable):
            call()
    monkeypatch.setenv(GRID_VALUES.variable, str(len(values)))
    assert len(parse_grid_text(",".join(map(str, values)), "n_bins")) == len(values)
    monkeypatch.setenv(GRID_VALUES.variable, "many")
    with pytest.raises(cd.ConfigError, match="must be a whole number"):
        parse_grid_text("1, 2", "n_bins")


def _simulated(n=200):
    sim = dirichlet_simulation(n=n, n_classes=3, random_state=0)
    return sim.probs, sim.labels


def test_bins_beyond_the_rows_are_refused_before_any_work():
    from calibdash.evaluation.config import check_rows, resolve

    P, y = _simulated(60)
    start = time.monotonic()
    with pytest.raises(cd.ConfigError, match="more bins than the data's 60 rows"):
        cd.evaluate(P, y, notion="top-label", estimators=["bins"], grids={"bins": {"n_bins": [10**12]}})
    assert time.monotonic() - start < 5
    check_rows("top-label", resolve("top-label", ["bins"])[1], 60)  # the default grid (up to 100 bins) is allowed


def test_a_wide_text_table_is_refused_from_its_raw_bytes():
    with pytest.raises(cd.InputError, match=r"x.csv \(1 line\): its line 1 has 200,001 fields.*CALIBDASH_MAX_TABLE_COLUMNS"):
        cd.load_predictions(b",".join([b"0.5"] * 200_001), name="x.csv")


def test_a_result_file_is_parsed_within_its_limits(monkeypatch):
    from calibdash.evaluation.evaluations import Evaluations

    with pytest.raises(cd.InputError, match="levels of nesting"):
        Evaluations.from_json('{"a": ' + "[" * 50 + "]" * 50 + "}")
    monkeypatch.setenv("CALIBDASH_MAX_RESULT_BYTES", "100")
    with pytest.raises(cd.InputError, match="CALIBDASH_MAX_RESULT_BYTES"):
        Evaluations.from_json(json.dumps({"format": "calibdash.Evaluations", "padding": "x" * 200}))
    monkeypatch.delenv("CALIBDASH_MAX_RESULT_BYTES")
    with pytest.raises(cd.InputError, match="not valid JSON"):
        Evaluations.from_json('{"format": "calibdash.Evaluations", "version": NaN}')


def test_the_documentation_lists_every_limit_with_its_default():
    from calibdash.limits import LIMITS

    rows = [line for line in (ROOT / "docs" / "cli.md").read_text().splitlines() if "CALIBDASH_MAX_" in line]
    for limit in LIMITS:
        (row,) = [r for r in rows if f"`{limit.variable}`" in r]
        assert f"| {limit.default:,} |" in row, row
