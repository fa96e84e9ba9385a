"""The documentation: the Sphinx site builds with warnings as errors, and the docstring
examples of the package run as doctests."""

import doctest
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import sktspt

ROOT = Path(__file__).resolve().parents[1]


def _modules_with_examples() -> list[str]:
    names = ["sktspt"] + [
        m.name for m in pkgutil.walk_packages(sktspt.__path__, "sktspt.")
        if not m.name.endswith("__main__")
    ]
    finder = doctest.DocTestFinder(exclude_empty=True)
    return [n for n in names if any(t.examples for t in finder.find(importlib.import_module(n)))]


MODULES = _modules_with_examples()


def test_the_docstring_examples_are_collected():
    # The public estimators' examples, at least; a refactoring must not lose them silently.
    for name in ("sktspt.classifier", "sktspt.pretrainer", "sktspt.benchmark.datasets"):
        assert any(m == name or m.startswith(name + ".") for m in MODULES), name


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             verbose=False, report=True)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"


def test_sphinx_site_builds_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    pytest.importorskip("myst_parser")
    out = tmp_path / "html"
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    for page in ("index", "user_guide", "api", "examples", "benchmark", "results",
                 "performance", "proximity", "tuning"):
        assert (out / f"{page}.html").exists(), page
    # The lab record stays a file in the repository, not a page of the site (issue 82).
    assert not (out / "tuning-history.html").exists()
    api = (out / "api.html").read_text()
    # The reference comes from the docstrings (numpydoc sections rendered).
    assert 'id="sktspt.SPTClassifier"' in api and 'id="sktspt.SPTPretrainer.transform"' in api
    assert "Parameters" in api and "load_dataset" in api
