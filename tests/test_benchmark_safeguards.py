"""The benchmark keeps runs apart and names bad input.

``--resume`` refuses rows fitted with other settings (also in runs from before the
settings file), a run without ``--resume`` never overwrites an earlier run's results, and
a malformed results row (by its line), a malformed ``.ts`` file (by name), a test label
that neither a header nor the training split declares, and options that cannot work are
reported. The model is a fake majority-class classifier: no training.
"""

import os

import pytest

BENCH = ["--datasets", "ItalyPowerDemand", "--models", "fake", "--seeds", "2", "--no-progress"]


@pytest.fixture
def bench(monkeypatch):
    from test_benchmark_robust import FAKES

    from sktspt.benchmark import MODELS, main

    monkeypatch.setitem(MODELS, "fake", FAKES["fake"])

    def run(*argv):
        """``main``'s return code, or the usage error's message (a SystemExit)."""
        import contextlib
        import io

        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                return main([*BENCH, *argv])
            except SystemExit:
                return err.getvalue()

    return run


def test_resume_refuses_rows_fitted_with_other_settings(bench, tmp_path):
    assert bench("--output", str(tmp_path), "--epochs", "2") == 0
    message = bench("--output", str(tmp_path), "--epochs", "50", "--resume")
    assert "fitted with epochs=2, not epochs=50" in message
    assert bench("--output", str(tmp_path), "--epochs", "2", "--resume") == 0


def test_resume_of_a_run_without_settings_checks_its_rows_epochs(bench, tmp_path):
    from sktspt.benchmark.cli import SETTINGS_FILE

    assert bench("--output", str(tmp_path)) == 0
    os.remove(tmp_path / SETTINGS_FILE)  # a run of a version before the file
    text = (tmp_path / "results.csv").read_text().splitlines()
    head = text[0].split(",")
    rows = [line.split(",") for line in text[1:]]
    for row in rows:
        row[head.index("epochs")] = "2"
    (tmp_path / "results.csv").write_text("\n".join([text[0], *map(",".join, rows)]) + "\n")
    assert "fitted with epochs=2, not 50" in bench("--output", str(tmp_path), "--epochs", "50",
                                                   "--resume")


@pytest.mark.parametrize("text", ["[]", "null", '"x"', "3"])
def test_a_settings_file_that_is_no_mapping_is_a_one_line_error(bench, tmp_path, text):
    from sktspt.benchmark.cli import SETTINGS_FILE

    assert bench("--output", str(tmp_path)) == 0
    (tmp_path / SETTINGS_FILE).write_text(text)
    message = bench("--output", str(tmp_path), "--resume")
    assert "not a run's settings" in message and "Traceback" not in message


def test_resume_without_settings_refuses_settings_its_rows_do_not_record(bench, tmp_path):
    from sktspt.benchmark.cli import SETTINGS_FILE

    assert bench("--output", str(tmp_path), "--model-params", "d_model=16") == 0
    os.remove(tmp_path / SETTINGS_FILE)
    message = bench("--output", str(tmp_path), "--model-params", "d_model=32", "--resume")
    assert "no results.settings.json" in message and "model_params={'d_model': 32}" in message
    assert not (tmp_path / SETTINGS_FILE).exists()  # nothing rewritten
    for option in (["--threads", "2"], ["--data-dir", str(tmp_path)]):
        assert "cannot be checked" in bench("--output", str(tmp_path), *option, "--resume")


def test_resume_records_and_checks_the_data_folder_and_threads(bench, tmp_path):
    out, data = tmp_path / "out", tmp_path / "data"
    data.mkdir()
    assert bench("--output", str(out), "--data-dir", str(data)) == 0
    message = bench("--output", str(out), "--resume")
    assert f"data_dir='{data.resolve()}'" in message and "not data_dir=None" in message
    message = bench("--output", str(out), "--data-dir", str(data), "--threads", "2",
                    "--resume")
    assert "fitted with threads=1, not threads=2" in message
    assert bench("--output", str(out), "--data-dir", str(data), "--resume") == 0


def test_runs_without_resume_never_overwrite_an_earlier_runs_results(bench, tmp_path):
    from sktspt.benchmark.results import read_results

    for seeds in ("1", "2", "3"):
        assert bench("--output", str(tmp_path), "--seeds", seeds) == 0
    assert len(read_results(tmp_path / "results.previous.csv")) == 1
    assert len(read_results(tmp_path / "results.previous.2.csv")) == 2
    assert len(read_results(tmp_path / "results.csv")) == 3


@pytest.mark.parametrize("column, value", [("accuracy", "abc"), ("seed", "x"),
                                           ("seed", ""), ("fit_s", "1.2.3")])
def test_a_malformed_results_row_is_reported_with_its_line_number(bench, tmp_path, column,
                                                                  value):
    assert bench("--output", str(tmp_path)) == 0
    lines = (tmp_path / "results.csv").read_text().splitlines()
    head = lines[0].split(",")
    row = lines[2].split(",")
    row[head.index(column)] = value
    lines[2] = ",".join(row)
    (tmp_path / "results.csv").write_text("\n".join(lines) + "\n")
    message = bench("--output", str(tmp_path), "--resume")
    assert f"results.csv, line 3: {column} is" in message


def test_benchmark_options_that_cannot_work_are_usage_errors(bench, tmp_path):
    assert "--threads 100000 is more than" in bench("--output", str(tmp_path),
                                                    "--threads", "100000")
    assert "is not a folder" in bench("--output", "/dev/null")


def archive_copy(folder, edit_train=None, edit_test=None):
    """ItalyPowerDemand's .ts files (shipped with sktime) as problem ``Foo`` in ``folder``,
    each split's text edited by ``edit_*(str) -> str``."""
    import sktime.datasets

    src = os.path.join(os.path.dirname(sktime.datasets.__file__), "data", "ItalyPowerDemand")
    (folder / "Foo").mkdir()
    for split, edit in (("TRAIN", edit_train), ("TEST", edit_test)):
        with open(os.path.join(src, f"ItalyPowerDemand_{split}.ts")) as f:
            text = f.read()
        (folder / "Foo" / f"Foo_{split}.ts").write_text(edit(text) if edit else text)
    return folder


def benchmark_errors(bench, tmp_path, *argv) -> str:
    """The usage error of a benchmark run, or the errors of its failed rows."""
    from sktspt.benchmark.results import read_results

    outcome = bench(*argv, "--output", str(tmp_path / "out"))
    if isinstance(outcome, str):
        return outcome
    return "\n".join(read_results(tmp_path / "out" / "results.csv")["error"])


def test_a_malformed_ts_file_is_reported_by_name(bench, tmp_path):
    data = archive_copy(tmp_path, edit_train=lambda t: t.replace("@univariate true\n", ""))
    message = benchmark_errors(bench, tmp_path, "--datasets", "Foo", "--data-dir", str(data))
    assert "Foo_TRAIN.ts is not a readable .ts file" in message


def test_a_test_label_that_neither_header_nor_training_split_declares_is_refused(
        bench, tmp_path):
    def relabel(text):
        head, data = text.split("@data\n")
        lines = data.splitlines()
        lines[0] = lines[0].rsplit(":", 1)[0] + ":7"
        return head + "@data\n" + "\n".join(lines) + "\n"

    data = archive_copy(tmp_path, edit_test=relabel)
    message = benchmark_errors(bench, tmp_path, "--datasets", "Foo", "--data-dir", str(data))
    assert "the test split has label(s) ['7'] that neither" in message
