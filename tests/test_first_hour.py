"""Frictions of a first hour with the package (issue 83): messages a newcomer meets first."""

import ast
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import TINY_NET, make_panel

from sktspt import SPTClassifier, SPTPretrainer

FIT = dict(max_epochs=1, **TINY_NET)


@pytest.mark.parametrize("dtype", [float, object])
def test_nan_labels_say_labels_must_not_be_nan_and_how_to_mark_unlabelled_rows(dtype):
    X, y = make_panel(n=12, c=1, t=16)
    y = y.astype(float).astype(dtype)
    y[[2, 5]] = np.nan
    with pytest.raises(ValueError) as info:
        SPTClassifier(**FIT).fit(X, y)
    message = str(info.value)
    assert "Input y contains NaN" not in message
    assert "[2, 5]" in message and "-1" in message, message


def test_a_channel_count_of_one_is_singular():
    X, y = make_panel(n=12, c=1, t=16)
    clf = SPTClassifier(**FIT).fit(X, y)
    with pytest.raises(ValueError, match=r"X has 2 channels, but .* fitted on 1 channel\.$"):
        clf.predict(np.concatenate([X, X], axis=1))
    pre = SPTPretrainer(pretrain_epochs=1, **TINY_NET).fit(X)
    with pytest.raises(ValueError, match=r"X has 2 channels, but the pretrainer was fitted on "
                                         r"1 channel\."):
        SPTClassifier(pretrainer=pre, **FIT).fit(np.concatenate([X, X], axis=1), y)
    with pytest.raises(ValueError, match="X_unlabeled has 2 channels, but X has 1"):
        SPTClassifier(**FIT).fit(X, y, X_unlabeled=np.concatenate([X, X], axis=1))


EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_examples_import_only_public_names(script):
    private = []
    for node in ast.walk(ast.parse(script.read_text())):
        names = ([node.module or ""] + [a.name for a in node.names]
                 if isinstance(node, ast.ImportFrom) else
                 [a.name for a in node.names] if isinstance(node, ast.Import) else [])
        if names[:1] == ["__future__"]:
            continue
        if any(part.startswith("_") for name in names for part in name.split(".")):
            private.append(ast.unparse(node))
    assert not private, f"{script.name} imports private names: {private}"


def test_quickstart_runs_with_the_package_default_budget_or_a_given_one(monkeypatch, capsys):
    script = next(p for p in EXAMPLES if p.name == "quickstart.py")
    monkeypatch.setattr(sys, "argv", [str(script), "--dataset", "ItalyPowerDemand",
                                      "--seeds", "0", "--steps", "20"])
    runpy.run_path(str(script), run_name="__main__")
    out = capsys.readouterr().out
    assert "SPT" in out and "scratch" in out and "accuracy" in out
