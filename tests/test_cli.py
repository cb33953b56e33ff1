"""The command line, run as users run it: ``python -m calibdash`` in a subprocess.

The CIFAR-10 run uses a reduced search (four estimators, three bin counts, two
bandwidths) to keep the file fast: the point is the files and the numbers in them, which
are checked against :func:`calibdash.evaluate` called directly with the same settings.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import calibdash as cd
from calibdash.cli import CLIError, Progress, build_parser, load_run, parse_grid_option, parse_notions
from calibdash.lab.simulation import dirichlet_simulation
from tests.shared_data import SHARED_DATA

ROOT = Path(__file__).resolve().parents[1]
LENET = SHARED_DATA / "cifar10_lenet5.npz"
FILES = ("summary.csv", "curves.csv", "others.csv", "result.json", "report.html")

# The reduced search of the CIFAR-10 run, on the command line and in Python.
CLI_ARGS = ["--notion", "top-label,canonical", "--estimators", "15-bins,bins,kde,temperature",
            "--grid", "bins.n_bins=5,10,20", "--grid", "kde.bandwidth=0.01,0.1", "--random-state", "3", "--jobs", "2"]
PY_RUNS = {
    "top-label": dict(estimators=["15-bins", "bins", "kde", "temperature"],
                      grids={"bins": {"n_bins": [5, 10, 20]}, "kde": {"bandwidth": [0.01, 0.1]}}),
    "canonical": dict(estimators=["kde", "temperature"], grids={"kde": {"bandwidth": [0.01, 0.1]}}),
}
SMALL_ARGS = ["--notion", "top-label", "--estimators", "bins,kde", "--grid", "bins.n_bins=5,10",
              "--grid", "kde.bandwidth=0.1,0.5", "--folds", "3", "--random-state", "1"]
SMALL_PY = dict(notion="top-label", estimators=["bins", "kde"], grids={"bins": {"n_bins": [5, 10]}, "kde": {"bandwidth": [0.1, 0.5]}},
                n_folds=3, random_state=1)


def run_cli(*args, check=None):
    proc = subprocess.run([sys.executable, "-m", "calibdash", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    if check is not None:
        assert proc.returncode == check, proc.stderr[-3000:]
    return proc


def small_npz(path, seed, n=600):
    sim = dirichlet_simulation(n=n, n_classes=3, alpha=0.5, random_state=seed)
    np.savez(path, predictions=sim.probs, ground_truth=sim.labels)
    return path


def assert_summary_matches(csv_frame, result):
    """Every number of a summary.csv against the result of cd.evaluate (to 1e-12)."""
    got = csv_frame.reset_index(drop=True)
    want = result.summary.reset_index(drop=True)
    assert list(got["estimator"]) == list(want["estimator"])
    assert list(got["hyperparameters"]) == list(want["hyperparameters"])
    assert [json.loads(p) for p in got["params"]] == [json.loads(json.dumps(p, default=str)) for p in want["params"]]
    for col in ["val_risk", "val_risk_se", "sqrt_risk_x100", "sqrt_risk_x100_se", "estimate", "estimate_se",
                "squared_estimate", "squared_estimate_se"]:
        np.testing.assert_allclose(got[col].to_numpy(float), want[col].to_numpy(float), rtol=1e-12, atol=0, err_msg=col)
    assert list(got["at_grid_edge"]) == list(want["at_grid_edge"])


def assert_curves_match(csv_frame, result):
    got = csv_frame.reset_index(drop=True)
    want = result.curves.reset_index(drop=True)
    assert list(got["estimator"]) == list(want["estimator"]) and list(got["fold"]) == list(want["fold"])
    for g, w in zip(got["value"], want["value"]):  # numbers, or words such as temperature "fit"
        assert (str(g) == w) if isinstance(w, str) else float(g) == pytest.approx(float(w), rel=1e-12)
    np.testing.assert_allclose(got["val_risk"].to_numpy(float), want["val_risk"].to_numpy(float), rtol=1e-12, atol=0)


@pytest.fixture(scope="module")
def lenet_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "lenet5"
    proc = run_cli("evaluate", LENET, *CLI_ARGS, "--out", out, check=0)
    return out, proc


@pytest.fixture(scope="module")
def lenet_direct():
    pred = cd.load_predictions(LENET)
    return pred, {notion: cd.evaluate(pred, notion=notion, random_state=3, n_jobs=2, **kw) for notion, kw in PY_RUNS.items()}


@pytest.mark.slow
@pytest.mark.shared_data
def test_evaluate_writes_every_file_with_the_numbers_of_evaluate(lenet_run, lenet_direct):
    out, proc = lenet_run
    pred, direct = lenet_direct
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    summary = pd.read_csv(out / "summary.csv")
    curves = pd.read_csv(out / "curves.csv")
    assert list(summary["notion"].unique()) == ["top-label", "canonical"]
    for notion, res in direct.items():
        assert_summary_matches(summary[summary["notion"] == notion], res)
        assert_curves_match(curves[curves["notion"] == notion], res)
    run = load_run(out / "result.json")
    assert list(run) == ["cifar10_lenet5"]
    for notion, res in run["cifar10_lenet5"].items():
        assert res.config["data_sha256"] == pred.sha256
        assert res.config["input"]["predictions"] == str(LENET.resolve())
        assert res.config["call"] == json.loads(json.dumps(direct[notion].config["call"]))
        cols = [c for c in res.summary.columns if c != "seconds"]
        pd.testing.assert_frame_equal(res.summary[cols], direct[notion].summary[cols], check_exact=True)
        pd.testing.assert_frame_equal(res.curves, direct[notion].curves, check_exact=True)
        pd.testing.assert_frame_equal(res.folds, direct[notion].folds, check_exact=True)
    html = (out / "report.html").read_text(encoding="utf-8")
    # per notion: risk curves, estimates (and the literature's estimates when there are any);
    # then the top-label reliability diagram and the canonical per-class panels
    per_notion = [2 + int(len(r.others) > 0) for r in direct.values()]
    figures = sum(per_notion) + 2
    assert pred.sha256 in html and f'<meta name="calibdash-figures" content="{figures}">' in html
    assert html.count("Plotly.newPlot(") == figures
    # the verdict on stdout, progress on stderr (one line per step: not a terminal)
    assert "percentage points" in proc.stdout and "report.html" in proc.stdout
    # the interval, the tied estimators and the reference h = 0, per notion
    from calibdash.display.verdict import verdict

    for res in direct.values():
        v = verdict(res)
        assert f"95% interval {v.low_pp:.2f} to {v.high_pp:.2f}" in proc.stdout
    assert proc.stdout.count("tied with the best (") == 2 and proc.stdout.count("h = 0 (perfectly calibrated): ") == 2
    assert "cifar10_lenet5 1/" in proc.stderr and "top-label, fold" in proc.stderr and "done" in proc.stderr
    # the report is written after the bar is done, and the log says so
    assert proc.stderr.index("done\n") < proc.stderr.index("cifar10_lenet5: writing the tables and the report\n")


@pytest.mark.slow
@pytest.mark.shared_data
def test_the_literature_estimators_are_chosen_written_and_rerun(tmp_path, lenet_direct):
    pred, _ = lenet_direct
    out = tmp_path / "others"
    others = "ece-15-bins,ece-kde,skce-block,variational-brier-temperature"
    run_cli("evaluate", LENET, *SMALL_ARGS, "--notion", "canonical", "--others", others, "--out", out, "--quiet", check=0)
    table = pd.read_csv(out / "others.csv")
    run = load_run(out / "result.json")["cifar10_lenet5"]
    for notion, res in run.items():
        rows = table[table["notion"] == notion].reset_index(drop=True)
        assert list(rows["estimator"]) == list(res.others["estimator"]) == [
            o for o in others.split(",") if notion == "canonical" or not o.startswith("variational-brier")]
        np.testing.assert_allclose(rows["estimate"], res.others["estimate"], rtol=1e-12, atol=0)
    direct = cd.evaluate(pred, notion="canonical", estimators=["kde"], grids={"kde": {"bandwidth": [0.1, 0.5]}},
                         others=others.split(","), n_folds=3, random_state=1)
    pd.testing.assert_frame_equal(run["canonical"].others.drop(columns="seconds"), direct.others.drop(columns="seconds"),
                                  check_exact=True)
    assert run_cli("rerun", out / "result.json", "--use-recorded-paths", "--quiet").returncode == 0
    none = tmp_path / "none"
    run_cli("evaluate", LENET, *SMALL_ARGS, "--others", "none", "--out", none, "--quiet", check=0)
    assert pd.read_csv(none / "others.csv").empty


@pytest.mark.slow
@pytest.mark.shared_data
def test_rerun_reproduces_every_number(lenet_run):
    out, _ = lenet_run
    proc = run_cli("rerun", out / "result.json", "--use-recorded-paths", "--jobs", "2", check=0)
    assert proc.stdout.count("identical") == 2, proc.stdout


@pytest.mark.slow
def test_several_files_give_subfolders_one_comparison_report_and_rerun(tmp_path):
    a, b = small_npz(tmp_path / "model_a.npz", 1), small_npz(tmp_path / "model_b.npz", 2)
    out = tmp_path / "out"
    run_cli("evaluate", a, b, *SMALL_ARGS, "--out", out, "--quiet", check=0)
    assert sorted(p.name for p in out.iterdir()) == sorted([*FILES, "model_a", "model_b"])
    summary = pd.read_csv(out / "summary.csv")
    direct = {}
    for name, path in (("model_a", a), ("model_b", b)):
        assert sorted(p.name for p in (out / name).iterdir()) == sorted(FILES)
        res = direct[name] = cd.evaluate(cd.load_predictions(path), **SMALL_PY)
        assert_summary_matches(pd.read_csv(out / name / "summary.csv"), res)
        assert_summary_matches(summary[summary["model"] == name], res)
        assert_curves_match(pd.read_csv(out / name / "curves.csv"), res)
        assert load_run(out / name / "result.json")[name]["top-label"].config["data_sha256"] == res.config["data_sha256"]
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="comparison"' in html and html.count("plotly.js v") == 1
    assert set(load_run(out / "result.json")) == {"model_a", "model_b"}
    # the joint result.json reruns both models
    proc = run_cli("rerun", out / "result.json", "--use-recorded-paths", check=0)
    assert proc.stdout.count("identical") == 2

    # a changed number is found and printed, with exit status 1
    obj = json.loads((out / "model_a" / "result.json").read_text())
    table = obj["models"]["model_a"]["top-label"]["summary"]
    table["data"][0][table["columns"].index("val_risk")] *= 1 + 1e-7
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(obj))
    proc = run_cli("rerun", tampered, "--use-recorded-paths", check=1)
    assert "val_risk" in proc.stdout and "1 difference" in proc.stdout, proc.stdout
    assert "differs" in proc.stderr and "Traceback" not in proc.stderr
    # a difference in the last digits is rounding (another CPU's), unless --rtol 0 asks for every digit
    obj = json.loads((out / "model_a" / "result.json").read_text())
    table = obj["models"]["model_a"]["top-label"]["summary"]
    table["data"][0][table["columns"].index("val_risk")] *= 1 + 1e-14
    tampered.write_text(json.dumps(obj))
    proc = run_cli("rerun", tampered, "--use-recorded-paths", check=0)
    assert "the same to rounding" in proc.stdout and "1 number(s) differ in their last digits" in proc.stdout, proc.stdout
    proc = run_cli("rerun", tampered, "--use-recorded-paths", "--rtol", "0", check=1)
    assert "1 difference" in proc.stdout, proc.stdout

    # other data under the recorded name is refused before any work
    proc = run_cli("rerun", out / "model_a" / "result.json", "--predictions", b, check=2)
    assert "does not hold the evaluated data" in proc.stderr and "Traceback" not in proc.stderr

    # a single EvaluationResult (the app's JSON download) reruns when the file is given
    single = tmp_path / "app_download.json"
    single.write_text(direct["model_a"].to_json())
    proc = run_cli("rerun", single, "--predictions", a, "--out", tmp_path / "again", check=0)
    assert "identical" in proc.stdout
    assert sorted(p.name for p in (tmp_path / "again").iterdir()) == sorted(FILES)


@pytest.mark.slow
def test_a_local_dask_cluster_gives_the_same_numbers(tmp_path):
    distributed = pytest.importorskip("distributed")
    a = small_npz(tmp_path / "d.npz", 5, n=800)
    out = tmp_path / "dask"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        run_cli("evaluate", a, *SMALL_ARGS, "--dask-scheduler", cluster.scheduler_address, "--out", out, "--quiet", check=0)
        # the work ran on the cluster's workers: they had to import the pipeline to run its tasks
        imported = client.run(lambda: "calibdash.evaluation.pipeline" in __import__("sys").modules)
        assert len(imported) == 2 and any(imported.values()), imported
    res = cd.evaluate(cd.load_predictions(a), **SMALL_PY)
    assert_summary_matches(pd.read_csv(out / "summary.csv"), res)
    curves = pd.read_csv(out / "curves.csv")
    assert_curves_match(curves, res)


# glibc serves blocks below its mmap threshold from the heap, and lifts that threshold to the
# size of any mapped block freed (up to 32 MB): after that, blocks freed below a live one stay
# in the process. The Dask coordinator fixes both thresholds (see cli._return_freed_memory).
FREED_MEMORY_PROBE = """
import sys
import numpy as np
from calibdash import cli
rss = lambda: int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) / 1024
big = np.ones(2 << 20); del big  # a mapped 16 MB block freed: the threshold rises to 16 MB
if sys.argv[1] == "tuned":
    assert cli._return_freed_memory()
blocks = [np.ones(1 << 20) for _ in range(40)]  # 40 x 8 MB
top = np.ones(100_000)  # a live block after them
before = rss()
del blocks
print(before - rss())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_the_dask_coordinator_gives_freed_memory_back():
    # glibc's defaults: a LocalCluster started in this process leaves MALLOC_TRIM_THRESHOLD_
    # in os.environ (Distributed's nanny sets it there for the workers it spawns).
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    freed = {mode: float(subprocess.run([sys.executable, "-c", FREED_MEMORY_PROBE, mode], capture_output=True, text=True,
                                        check=True, env=env).stdout) for mode in ("default", "tuned")}
    assert freed["default"] < 160 < 300 < freed["tuned"], freed  # of 320 MB freed


EVALUATE_IMPORTS_PROBE = """
import sys
from calibdash.cli import main
status = main(sys.argv[1:])
print(status, sorted(m for m in ("scipy.stats", "calibdash.clinical.validation") if m in sys.modules))
"""


def test_evaluate_and_its_report_do_not_import_the_clinical_statistics(tmp_path):
    # scipy.stats costs every command about 0.6 s; only validate and plan need it. The
    # clinical package states its group limit for the help text without importing it.
    data = small_npz(tmp_path / "small.npz", seed=0)
    out = subprocess.run([sys.executable, "-c", EVALUATE_IMPORTS_PROBE, "evaluate", str(data), *SMALL_ARGS, "--jobs", "1",
                          "--out", str(tmp_path / "out"), "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-2:] == ["0", "[]"], out.stdout
    assert (tmp_path / "out" / "report.html").exists()
    from calibdash.clinical import MAX_GROUPS
    from calibdash.clinical.validation import MAX_GROUPS as used_by_the_validation

    assert MAX_GROUPS is used_by_the_validation


def _bad_inputs(tmp):
    np.save(tmp / "objects.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    sim = dirichlet_simulation(n=300, n_classes=3, random_state=0)
    np.save(tmp / "probs.npy", sim.probs)
    np.save(tmp / "labels_short.npy", sim.labels[:-5])
    (tmp / "not_a_result.json").write_text('{"hello": 1}')
    out = ["--out", tmp / "out"]
    return {
        "missing file": ["evaluate", tmp / "missing.npz", *out],
        "pickle": ["evaluate", tmp / "objects.npy", "--labels", tmp / "labels_short.npy", *out],
        "grid without values": ["evaluate", LENET, "--grid", "kde.bandwidth", *out],
        "grid with a word": ["evaluate", LENET, "--grid", "kde.bandwidth=0.1,wide", *out],
        "grid of an unknown estimator": ["evaluate", LENET, "--grid", "kernel.bandwidth=0.1", *out],
        "unknown estimator": ["evaluate", LENET, "--estimators", "bins,magic", *out],
        "labels of another length": ["evaluate", tmp / "probs.npy", "--labels", tmp / "labels_short.npy", *out],
        "one fold": ["evaluate", LENET, "--folds", "1", *out],
        "unknown notion": ["evaluate", LENET, "--notion", "top-label,best", *out],
        "no --out": ["evaluate", LENET],
        "not a number": ["evaluate", LENET, "--random-state", "zero", *out],
        "unknown literature estimator": ["evaluate", LENET, "--others", "ece-15-bins,ece-magic", *out],
        "literature estimator of no notion run": ["evaluate", LENET, "--notion", "top-label", "--others",
                                                  "variational-brier-temperature", *out],
        "rerun of a file that is not a result": ["rerun", tmp / "not_a_result.json"],
        "rerun of a missing file": ["rerun", tmp / "missing.json"],
        "rerun with a negative tolerance": ["rerun", tmp / "missing.json", "--rtol", "-1e-9"],
    }


# Each case in a real process (the brief's table); the rest of the table runs in-process below.
SUBPROCESS_CASES = ["missing file", "pickle", "grid without values", "unknown estimator", "labels of another length",
                    "one fold", "no --out", "rerun of a file that is not a result"]


def _assert_one_line(stderr, case):
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("calibdash: error: "), (case, stderr)
    assert "Traceback" not in stderr and len(lines[0]) > len("calibdash: error: ") + 10


@pytest.mark.parametrize("case", SUBPROCESS_CASES)
@pytest.mark.slow
@pytest.mark.shared_data
def test_bad_input_gives_one_line_and_status_2(tmp_path, case):
    proc = run_cli(*_bad_inputs(tmp_path)[case])
    assert proc.returncode == 2, (case, proc.stderr)
    _assert_one_line(proc.stderr, case)
    assert not (tmp_path / "out").exists()


@pytest.mark.shared_data
def test_the_rest_of_the_bad_inputs_in_process(tmp_path, capsys):
    from calibdash.cli import main

    cases = _bad_inputs(tmp_path)
    for case, args in cases.items():
        if case in SUBPROCESS_CASES:
            continue
        try:
            status = main([str(a) for a in args])
        except SystemExit as e:  # argparse's own errors
            status = e.code
        assert status == 2, case
        _assert_one_line(capsys.readouterr().err, case)
        assert not (tmp_path / "out").exists(), case


@pytest.mark.slow
def test_help_explains_every_option():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "cmd")
    for name, p in sub.choices.items():
        for action in p._actions:
            assert action.help, f"{name}: {action.dest} has no help"
    proc = run_cli("evaluate", "--help", check=0)
    for option in ("--labels", "--kind", "--label-column", "--prob-columns", "--positive", "--class-names",
                   "--groups", "--notion", "--estimators", "--grid", "--test-size", "--folds",
                   "--random-state", "--jobs", "--dask-scheduler", "--out", "--title", "--quiet"):
        assert option in proc.stdout
    assert "rerun" in parser.format_help() and "evaluate" in parser.format_help()


def test_option_parsers():
    assert parse_notions(None) == ["top-label", "canonical"]
    assert parse_notions(["canonical", "top-label,canonical", "classwise"]) == ["canonical", "top-label", "classwise"]
    with pytest.raises(CLIError, match="unknown notion 'toplabel'"):
        parse_notions(["toplabel"])
    grids = parse_grid_option(["bins.n_bins=5,10", "kde.bandwidth=1e-3, 0.1", "temperature.temperature=fit,1.5",
                               "bins-quantile.strategy=quantile", "bins.strategy=uniform"])
    assert grids == {"bins": {"n_bins": [5, 10], "strategy": ["uniform"]}, "kde": {"bandwidth": [1e-3, 0.1]},
                     "temperature": {"temperature": ["fit", 1.5]}, "bins-quantile": {"strategy": ["quantile"]}}
    for bad in ("bins.n_bins=5.5", "bins=5", "bins.n_bins=", ".n_bins=5", "nope.x=1", "kde.bandwidth=-1"):
        with pytest.raises(CLIError):
            parse_grid_option([bad])


class _Terminal:
    def __init__(self, tty):
        self.text, self.tty = "", tty

    def write(self, s):
        self.text += s

    def flush(self):
        pass

    def isatty(self):
        return self.tty


def test_progress_redraws_on_a_terminal_and_writes_lines_otherwise():
    term = _Terminal(True)
    bar = Progress(stream=term)
    cb = bar.callback("m top-label")
    for done, msg in ((0, "starting"), (1, "fold 1/2 validated"), (2, "done")):
        cb(done, 2, msg)
    assert term.text.count("\r") == 3 and term.text.endswith("\n") and term.text.count("\n") == 1
    assert "[" + "#" * 28 + "] 2/2 done" in term.text
    log = _Terminal(False)
    cb = Progress(stream=log).callback("m")
    cb(0, 2, "starting")
    cb(2, 2, "done")
    assert log.text == "m 0/2 (0%) starting\nm 2/2 (100%) done\n"
    # a stage without counted steps gets one line, after the bar's own line is closed
    term = _Terminal(True)
    bar = Progress(stream=term)
    bar.callback("m")(1, 2, "fold 1/2 validated")
    bar.status("m: writing the tables and the report")
    assert term.text.endswith("validated\nm: writing the tables and the report\n")
    quiet = _Terminal(True)
    Progress(stream=quiet, enabled=False).status("m: writing")
    assert quiet.text == ""
    quiet = _Terminal(True)
    Progress(stream=quiet, enabled=False).callback("m")(1, 2, "x")
    assert quiet.text == ""


# ----------------------------------------------------------------------------- bugs vs bad input
def _status(args):
    from calibdash.cli import main

    try:
        return main([str(a) for a in args])
    except SystemExit as e:  # argparse's own errors
        return e.code


def test_bad_input_and_bugs_are_told_apart(tmp_path, capsys, monkeypatch):
    """Bad input (a CalibdashError, CLIError included) gives one line and status 2; any
    other exception, even a ValueError raised deep in the library, is a bug: its
    traceback, the request to report it, and status 3."""
    from calibdash.cli import EXIT_BAD_INPUT, EXIT_BUG, INTERNAL_ERROR

    assert issubclass(CLIError, cd.ConfigError) and issubclass(CLIError, ValueError)
    a = small_npz(tmp_path / "a.npz", 0, n=300)
    np.save(tmp_path / "short.npy", np.zeros(7, dtype=int))
    out = ["--out", tmp_path / "out"]
    for case, args in {
        "one fold (the CLI's own check)": ["evaluate", a, "--folds", "1", *out],
        "labels of another length (an InputError)": ["evaluate", a, "--labels", tmp_path / "short.npy", *out],
        "unknown notion (a ConfigError)": ["evaluate", a, "--notion", "best", *out],
    }.items():
        assert _status(args) == EXIT_BAD_INPUT, case
        _assert_one_line(capsys.readouterr().err, case)

    for exc in (ValueError("boom"), KeyError("boom"), FileNotFoundError(2, "No such file or directory", "/no/such/cache")):
        def broken(*args, _exc=exc, **kwargs):
            raise _exc

        monkeypatch.setattr("calibdash.evaluation.pipeline._fold_task", broken)
        status = _status(["evaluate", a, *SMALL_ARGS, "--quiet", "--jobs", "1", *out])
        err = capsys.readouterr().err
        assert status == EXIT_BUG, (exc, err)
        assert "Traceback (most recent call last)" in err and f"{type(exc).__name__}: {exc}" in err
        assert err.strip().splitlines()[-1] == INTERNAL_ERROR + ".", err
        assert "calibdash: error:" not in err and "to the calibdash maintainers" in err

    # The loader wraps what it did not anticipate in an InputError(internal=True): a bug too.
    monkeypatch.setattr("calibdash.io.loading._load", lambda *args, **kwargs: {}["boom"])
    assert _status(["evaluate", a, "--quiet", *out]) == EXIT_BUG
    err = capsys.readouterr().err
    assert "KeyError: 'boom'" in err and "InputError: could not load" in err and err.strip().endswith(INTERNAL_ERROR + ".")


@pytest.mark.slow
def test_an_out_file_that_cannot_be_written_is_bad_input(tmp_path, capsys):
    a = small_npz(tmp_path / "a.npz", 0, n=300)
    out = tmp_path / "out"
    (out / "summary.csv").mkdir(parents=True)  # the OSError of os.replace names a file in --out
    assert _status(["evaluate", a, *SMALL_ARGS, "--quiet", "--out", out]) == 2
    err = capsys.readouterr().err
    _assert_one_line(err, "summary.csv is a directory")
    assert "summary.csv" in err


def test_help_states_the_exit_statuses():
    text = build_parser().format_help()
    assert "exit status:" in text and "3  an internal error, a bug in calibdash" in text


def clinical_csv(path, n=600, seed=4):
    """A clinical table the loader cannot read without a mapping: a probability column named
    'score', the labels as words in 'dx', and a site."""
    rng = np.random.default_rng(seed)
    p = rng.beta(0.7, 0.7, n)
    pd.DataFrame({"score": p, "dx": np.where(rng.random(n) < p, "malignant", "benign"),
                  "site": rng.choice(["north", "south"], n)}).to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_column_mapping_flags_are_recorded_and_rerun(tmp_path, capsys):
    from calibdash.cli import main

    csv = clinical_csv(tmp_path / "clinic.csv")
    out = tmp_path / "out"
    small = ["--notion", "top-label", "--estimators", "bins", "--grid", "bins.n_bins=5,10", "--others", "none",
             "--folds", "2", "--quiet", "--out", str(out)]
    # without the mapping: one line naming the flag that answers the question
    assert main(["evaluate", str(csv), *small]) == 2
    err = capsys.readouterr().err
    assert "'dx', 'site'" in err and "(on the command line: --label-column)" in err and not out.exists()
    assert main(["evaluate", str(csv), "--label-column", "dx", "--prob-columns", "score", *small]) == 2
    assert "(on the command line: --positive)" in capsys.readouterr().err
    args = ["evaluate", str(csv), "--label-column", "dx", "--prob-columns", "score", "--positive", "malignant",
            "--groups", "site", *small]
    assert main(args) == 0
    recorded = json.loads((out / "result.json").read_text())
    (res,) = load_run(out / "result.json")["clinic"].values()
    assert res.config["input"]["label_column"] == "dx" and res.config["input"]["prob_columns"] == ["score"]
    assert res.config["input"]["positive"] == "malignant" and res.config["input"]["groups"] == ["site"]
    want = cd.load_predictions(csv, label_column="dx", prob_columns=["score"], positive="malignant")
    assert res.config["data_sha256"] == want.sha256 and recorded
    assert "malignant" in (out / "report.html").read_text()
    capsys.readouterr()
    assert main(["rerun", str(out / "result.json"), "--use-recorded-paths", "--quiet"]) == 0, capsys.readouterr().err
    # --class-names says the same in column order (negative, positive)
    assert main(["evaluate", str(csv), "--label-column", "dx", "--prob-columns", "score", "--class-names",
                 "benign,malignant", *small]) == 0
    (res2,) = load_run(out / "result.json")["clinic"].values()
    assert res2.config["data_sha256"] == want.sha256 and res2.config["input"]["class_names"] == ["benign", "malignant"]


@pytest.mark.slow
def test_percent_kind_on_the_command_line(tmp_path, capsys):
    from calibdash.cli import main

    rng = np.random.default_rng(2)
    p = rng.beta(0.7, 0.7, 400)
    path = tmp_path / "pct.csv"
    pd.DataFrame({"p_malignant": np.round(100 * p, 1), "diagnosis": np.where(rng.random(400) < p, "malignant", "benign")}
                 ).to_csv(path, index=False)
    small = ["--notion", "top-label", "--estimators", "bins", "--grid", "bins.n_bins=5", "--others", "none",
             "--folds", "2", "--quiet", "--out", str(tmp_path / "out")]
    assert main(["evaluate", str(path), "--kind", "probabilities", *small]) == 2
    assert "kind='percent'" in capsys.readouterr().err
    assert main(["evaluate", str(path), "--kind", "percent", *small]) == 0
    assert main(["evaluate", str(path), *small]) == 0  # detected, with a note


# ----------------------------------------------------------------------------- plan
def _plan(*args, capsys):
    from calibdash.cli import main

    try:
        status = main(["plan", *map(str, args)])
    except SystemExit as e:  # argparse's own errors (a missing or unreadable value)
        status = e.code
    out = capsys.readouterr()
    return status, out.out, out.err


def test_plan_prints_the_table_of_plan_sample_size_and_writes_plan_csv(tmp_path, capsys):
    status, out, err = _plan("--prevalence", 0.018, "--c-statistic", 0.8, "--threshold", 0.08, "--target-oe", 1,
                             "--out", tmp_path / "plan", capsys=capsys)
    assert status == 0, err
    want = cd.plan_sample_size(prevalence=0.018, c_statistic=0.8, threshold=0.08, targets={"O:E": 1})
    rows = dict(zip(want["metric"], want["rows_needed"]))
    assert rows["calibration slope"] == 17128 and rows["AUROC"] == 4252  # the numbers of tests/clinical
    for label, metric in (("1. O:E", "O:E"), ("2. calibration slope", "calibration slope"), ("3. C statistic", "AUROC"),
                          ("4. standardised net benefit", "net benefit")):
        line = next(x for x in out.splitlines() if x.strip().startswith(label))
        assert f"{rows[metric]:,.0f}" in line.split()
    assert "minimum: 17,128 rows with 309 events, set by criterion 2 (calibration slope)" in out
    written = pd.read_csv(tmp_path / "plan" / "plan.csv")
    assert list(written.columns) == list(want.columns)
    assert written["rows_needed"].tolist() == want["rows_needed"].tolist()
    assert written["note"].tolist() == want["note"].tolist()


def test_plan_passes_every_flag_through(capsys, monkeypatch):
    import calibdash.clinical.sample_size as ss

    seen, real = {}, ss.plan_sample_size

    def fake(**kwargs):
        seen.update(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(ss, "plan_sample_size", fake)
    status, out, err = _plan("--prevalence", 0.1, "--c-statistic", 0.75, "--oe", 1.2, "--slope", 0.9, "--threshold", 0.1,
                             "--target-oe", 0.3, "--target-slope", 0.25, "--target-c", 0.08, "--target-nb", 0.15,
                             "--lp-mean", -2.5, "--lp-sd", 1.2, "--sensitivity", 0.6, "--specificity", 0.8, "--level", 0.9,
                             capsys=capsys)
    assert status == 0, err
    assert seen == dict(prevalence=0.1, c_statistic=0.75, oe=1.2, slope=0.9, threshold=0.1, lp_mean=-2.5, lp_sd=1.2,
                        sensitivity=0.6, specificity=0.8, level=0.9,
                        targets={"O:E": 0.3, "calibration slope": 0.25, "AUROC": 0.08, "net benefit": 0.15})
    assert "target widths are those of 90% intervals" in out


@pytest.mark.parametrize("args,words", [
    ([], "the following arguments are required: --prevalence, --c-statistic"),
    (["--prevalence", "x", "--c-statistic", "0.8"], "argument --prevalence: invalid float value: 'x'"),
    (["--prevalence", "1.5", "--c-statistic", "0.8"], "--prevalence must lie strictly between 0 and 1, got 1.5"),
    (["--prevalence", "nan", "--c-statistic", "0.8"], "--prevalence must lie strictly between 0 and 1, got nan"),
    (["--prevalence", "0.1", "--c-statistic", "0.4"], "--c-statistic must exceed 0.5"),
    (["--prevalence", "0.1", "--c-statistic", "0.8", "--oe", "0"], "--oe must be a positive number, got 0"),
    (["--prevalence", "0.1", "--c-statistic", "0.8", "--slope", "-1"], "--slope must be a positive number"),
    (["--prevalence", "0.1", "--c-statistic", "0.8", "--threshold", "1"], "--threshold must lie strictly between 0 and 1"),
    (["--prevalence", "0.1", "--c-statistic", "0.8", "--target-c", "0"], "--target-c must be a positive number"),
    (["--prevalence", "0.1", "--c-statistic", "0.8", "--target-nb", "0.2"], "--target-nb is the width for the net benefit"),
    (["--prevalence", "0.1", "--c-statistic", "0.8", "--lp-mean", "-2"], "give --lp-mean and --lp-sd together"),
    (["--prevalence", "0.1", "--c-statistic", "0.8", "--threshold", "0.1", "--sensitivity", "0.5"],
     "give --sensitivity and --specificity together"),
    (["--prevalence", "0.1", "--c-statistic", "0.8", "--sensitivity", "0.5", "--specificity", "0.9"], "give --threshold too"),
    (["--prevalence", "0.1", "--c-statistic", "0.8", "--specificity", "1.2", "--sensitivity", "0.5"],
     "--specificity must lie between 0 and 1"),
    (["--prevalence", "0.1", "--c-statistic", "0.8", "--level", "95"], "--level must lie strictly between 0 and 1"),
    (["--prevalence", "0.6", "--c-statistic", "0.8", "--oe", "0.5"], "mean predicted risk of 100% or more"),
])
def test_plan_refuses_bad_values_with_one_line_naming_the_flag(tmp_path, capsys, args, words):
    status, out, err = _plan(*args, "--out", tmp_path / "out", capsys=capsys)
    assert status == 2, (args, err)
    _assert_one_line(err, args)
    assert words in err, err
    assert out == "" and not (tmp_path / "out").exists()


def test_plan_help_lists_every_flag():
    text = next(a for a in build_parser()._actions if a.dest == "cmd").choices["plan"].format_help()
    for flag in ("--prevalence", "--c-statistic", "--oe", "--slope", "--threshold", "--target-oe", "--target-slope",
                 "--target-c", "--target-nb", "--lp-mean", "--lp-sd", "--sensitivity", "--specificity", "--level", "--out"):
        assert flag in text
    assert "Riley et al." in text and "exit status:" in text


@pytest.mark.parametrize("command, old, new, dest, value", [
    ("evaluate", ["--seed", "3"], ["--random-state", "3"], "random_state", 3),
    ("evaluate", ["--group-columns", "site"], ["--groups", "site"], "groups", "site"),
    ("validate", ["--seed", "5"], ["--random-state", "5"], "random_state", 5),
])
def test_retired_flags_still_work_with_a_note(command, old, new, dest, value, capsys):
    # renamed to the scientific Python vocabulary; the old flags are hidden and work for one release
    parser = build_parser()
    args = parser.parse_args([command, "preds.csv", *new, "--out", "out"])
    assert getattr(args, dest) == value and capsys.readouterr().err == ""
    args = parser.parse_args([command, "preds.csv", *old, "--out", "out"])
    assert getattr(args, dest) == value
    err = capsys.readouterr().err
    assert f"{old[0]} is deprecated" in err and f"use {new[0]}" in err
    sub = next(a for a in parser._actions if a.dest == "cmd").choices[command]
    assert old[0] not in sub.format_help() and new[0] in sub.format_help()


def test_evaluate_and_rerun_use_every_core_unless_told(tmp_path, monkeypatch):
    """The default --jobs is -1 (every core: the numbers do not depend on it); a given
    number is passed on as it is, with or without a Dask scheduler."""
    import calibdash.cli as cli

    a = small_npz(tmp_path / "a.npz", 0, n=300)
    seen = []
    real_evaluate, real_rerun = cli.evaluate_notions, cli.rerun_model

    def evaluate(*args, n_jobs, **kwargs):
        seen.append(("evaluate", n_jobs))
        return real_evaluate(*args, n_jobs=1, **kwargs)

    def rerun(*args, n_jobs, **kwargs):
        seen.append(("rerun", n_jobs))
        return real_rerun(*args, n_jobs=1, **kwargs)

    monkeypatch.setattr(cli, "evaluate_notions", evaluate)
    monkeypatch.setattr(cli, "rerun_model", rerun)
    out = tmp_path / "out"
    assert _status(["evaluate", a, *SMALL_ARGS, "--quiet", "--out", out]) == 0
    assert _status(["evaluate", a, *SMALL_ARGS, "--quiet", "--jobs", "1", "--out", tmp_path / "one"]) == 0
    assert _status(["rerun", out / "result.json", "--use-recorded-paths", "--quiet"]) == 0
    assert _status(["rerun", out / "result.json", "--use-recorded-paths", "--quiet", "--jobs", "3"]) == 0
    assert seen == [("evaluate", -1), ("evaluate", 1), ("rerun", -1), ("rerun", 3)]
