"""Files that are not regular: ``load`` refuses ``/dev/zero`` and a FIFO without reading or
waiting, and ``save`` refuses to replace a FIFO or ``/dev/null`` and never opens a FIFO
named like one of its temporary files. Each call runs in a process capped in memory and
time, so that a regression fails there instead of hanging the test run.
"""

import os

from conftest import ONE_EPOCH_FIT, data_fixture, fitted_fixture, model_file_fixture

from sktspt import load

data = data_fixture(n=12, t=16)
fitted = fitted_fixture(ONE_EPOCH_FIT)


model_file = model_file_fixture()


def guarded(code: str, timeout: float = 60, memory_mb: int = 3072) -> str:
    """Run ``code`` in a Python process of its own, capped in memory and time (so that a
    regression reads /dev/zero or blocks on a FIFO there, not in the test run); its output,
    or "TIMEOUT"."""
    import subprocess
    import sys

    import sktspt

    prelude = ("import resource\n"
               f"resource.setrlimit(resource.RLIMIT_AS, ({memory_mb} << 20, {memory_mb} << 20))\n")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(os.path.dirname(sktspt.__file__)), os.environ.get("PYTHONPATH", "")])}
    try:
        done = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True,
                              text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return "TIMEOUT"
    return done.stdout + done.stderr


REFUSALS = """
from sktspt import load
for call in {calls!r}:
    try:
        exec(call)
        print("DONE:", call)
    except ValueError as exc:
        print("REFUSED:", call, exc)
"""


def refusals(calls, timeout=60) -> list[str]:
    """Each of ``calls`` (Python statements) run in one guarded process, in order: the
    lines ``REFUSED: <call> <message>`` or ``DONE: <call>``."""
    out = guarded(REFUSALS.format(calls=list(calls)), timeout=timeout)
    lines = [line for line in out.splitlines() if line.startswith(("REFUSED:", "DONE:"))]
    assert len(lines) == len(calls), out
    return lines


def test_load_refuses_files_that_are_not_regular(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for line in refusals(['load("/dev/zero")', f"load({str(fifo)!r})"]):  # FIFO: no writer
        assert line.startswith("REFUSED:") and "not a regular file" in line, line


def test_save_refuses_to_replace_what_is_not_a_regular_file(model_file, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # A FIFO named like a stale temporary file of the target is left alone, not opened.
    stale = tmp_path / ".m.sktspt.0123456789abcdef.tmp"
    os.mkfifo(stale)
    est = f"load({str(model_file)!r})"
    calls = [f"{est}.save({str(fifo)!r})", f"{est}.save({str(tmp_path / 'm.sktspt')!r})"]
    if os.access("/dev/null", os.W_OK):
        calls.append(f'{est}.save("/dev/null")')
    lines = refusals(calls)
    for line in lines[:1] + lines[2:]:
        assert line.startswith("REFUSED:") and "not a regular file" in line, line
    assert lines[1].startswith("DONE:"), lines[1]
    assert os.path.exists(fifo) and not os.path.isfile(fifo)
    assert os.path.exists(stale) and not os.path.isfile("/dev/null")
    load(tmp_path / "m.sktspt")
