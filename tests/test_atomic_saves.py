"""Saving is atomic: a model file is always one complete save.

Threads saving to one path, a save overtaken by another while half written, saves killed
midway (their temporary files are removed, a running save's is not), the mode of a
replaced file, and a symbolic link as the target.
"""

import os
import stat
import threading

import numpy as np
from conftest import FAST_FIT, data_fixture, fitted_fixture

import sktspt.persistence.format as persistence_format
from sktspt import load

data = data_fixture(n=24, t=24)
fitted = fitted_fixture(FAST_FIT)


def folders(path):
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


def test_threads_saving_to_one_path_leave_a_good_file(fitted, data, tmp_path):
    X, _ = data
    path = tmp_path / "m.sktspt"
    for _ in range(10):
        errors = []

        def save(errors=errors):
            try:
                fitted.save(path)
            except Exception as exc:  # noqa: BLE001 - collected and reported below
                errors.append(exc)

        threads = [threading.Thread(target=save) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        np.testing.assert_array_equal(load(path).predict_proba(X), fitted.predict_proba(X))
    assert folders(tmp_path) == ["m.sktspt"]


def test_a_save_in_progress_keeps_its_own_temporary_file(fitted, data, tmp_path):
    """A slow save overtaken by a fast one to the same path: both complete intact."""
    X, _ = data
    path = tmp_path / "m"
    written, overtaken = threading.Event(), threading.Event()
    errors = []

    def slow_write(f):
        f.write(b"slow half ")
        written.set()
        overtaken.wait(10)
        f.write(b"and the rest")

    def slow():
        try:
            persistence_format.atomic_write(path, slow_write)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=slow)
    thread.start()
    assert written.wait(10)
    fitted.save(path)  # the fast save, while the slow one is half written
    np.testing.assert_array_equal(load(path).predict(X), fitted.predict(X))
    overtaken.set()
    thread.join()
    assert errors == []
    assert path.read_bytes() == b"slow half and the rest"
    assert folders(tmp_path) == ["m"]


def test_temporary_files_of_killed_saves_are_removed(fitted, tmp_path):
    import fcntl

    stale = tmp_path / ".m.sktspt.0123456789abcdef.tmp"  # a killed save of this version
    live = tmp_path / ".m.sktspt.fedcba9876543210.tmp"  # a save still running
    other = tmp_path / ".other.0123456789abcdef.tmp"  # another file's
    for p in (stale, live, other):
        p.write_bytes(b"partial")
    with open(live, "rb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        fitted.save(tmp_path / "m.sktspt")
        assert folders(tmp_path) == sorted([live.name, other.name, "m.sktspt"])


def test_save_keeps_the_mode_of_the_file_it_replaces(fitted, tmp_path):
    path = tmp_path / "m"
    path.write_bytes(b"old")
    os.chmod(path, 0o640)
    fitted.save(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    umask = os.umask(0o022)
    os.umask(umask)
    fitted.save(tmp_path / "new")
    assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o666 & ~umask


def test_save_through_a_symlink_replaces_its_target_and_keeps_the_link(fitted, data, tmp_path):
    X, _ = data
    target = tmp_path / "models" / "v1.sktspt"
    target.parent.mkdir()
    target.write_bytes(b"old")
    link = tmp_path / "current.sktspt"
    link.symlink_to(target)
    fitted.save(link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    np.testing.assert_array_equal(load(target).predict(X), fitted.predict(X))
    assert folders(target.parent) == ["v1.sktspt"]
