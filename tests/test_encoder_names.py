"""Issue 84: encoder names are names, resolved inside the package among what ``available()``
lists; a card without a valid hash is refused; the bytes hashed are the bytes loaded; a file
whose ``pretrainer`` is a path is refused at load; bad names and cards are ValueErrors."""

import builtins
import io
import json
import os
import shutil

import numpy as np
import pytest
from conftest import craft, make_panel

import sktspt.pretrained as hub
from sktspt import SPTClassifier, load
from sktspt.pretrained import available, card, pretrained

TINY = dict(depth=1, d_model=8, architecture__n_heads=2, architecture__dim_feedforward=8,
            pretrain_epochs=0, max_epochs=1, random_state=0)


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """A package folder holding the shipped encoder as ``mine``, and a folder beside it
    holding a copy as ``evil``."""
    folder, outside = tmp_path / "pkg", tmp_path / "outside"
    for where, name in ((folder, "mine"), (outside, "evil")):
        where.mkdir()
        for suffix in (".sktspt", ".json"):
            shutil.copy(hub.FOLDER / f"archive{suffix}", where / f"{name}{suffix}")
    monkeypatch.setattr(hub, "FOLDER", folder)
    return folder, outside


def test_encoder_names_that_are_paths_are_refused(shipped):
    folder, outside = shipped
    for suffix in (".sktspt", ".json"):  # a link inside the package to a file outside it
        os.symlink(outside / f"evil{suffix}", folder / f"link{suffix}")
    assert available() == ["mine"]
    for name in ("../outside/evil", str(outside / "evil"), "link"):
        with pytest.raises(ValueError, match="no pretrained encoder named"):
            pretrained(name)
        with pytest.raises(ValueError, match="no pretrained encoder named"):
            card(name)


@pytest.mark.parametrize("edit", [lambda c: c.pop("sha256"), lambda c: c.update(sha256=None),
                                  lambda c: c.update(sha256="abc")])
def test_a_card_without_a_valid_hash_is_refused(shipped, edit):
    folder, _ = shipped
    info = json.loads((folder / "mine.json").read_text())
    edit(info)
    (folder / "mine.json").write_text(json.dumps(info))
    with pytest.raises(ValueError, match="no valid sha256.*cannot be checked"):
        pretrained("mine")


def test_the_bytes_hashed_are_the_bytes_loaded(shipped, monkeypatch):
    folder, _ = shipped
    opened = []
    for module, name in ((builtins, "open"), (io, "open"), (os, "open")):
        real = getattr(module, name)

        def spy(file, *args, _real=real, **kwargs):
            if str(file).endswith("mine.sktspt"):
                opened.append(str(file))
            return _real(file, *args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    pretrained("mine")
    assert opened == [str(folder / "mine.sktspt")]  # read once: hashed, then loaded


def test_a_file_whose_pretrainer_is_a_path_is_refused_at_load(shipped, tmp_path):
    _, outside = shipped
    X, y = make_panel(n=8, c=1, t=16)
    SPTClassifier(**TINY).fit(X, y).save(tmp_path / "m.sktspt")

    def evil(meta):
        meta["params"]["pretrainer"] = str(outside / "evil.sktspt")

    craft(tmp_path / "m.sktspt", tmp_path / "crafted.sktspt", meta=evil)
    with pytest.raises(ValueError, match="pretrainer must be None or a shipped encoder's name"):
        load(tmp_path / "crafted.sktspt")


@pytest.mark.parametrize("text", ["[1, 2]", "", "\ufeff{}", "null"])
def test_a_malformed_card_is_a_value_error_naming_it(shipped, text):
    folder, _ = shipped
    (folder / "mine.json").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=r"model card .*mine\.json"):
        card("mine")
    with pytest.raises(ValueError, match=r"model card .*mine\.json"):
        pretrained("mine")


def test_a_name_too_long_for_a_file_is_a_value_error(shipped):
    with pytest.raises(ValueError, match="no pretrained encoder named 'xxxx"):
        pretrained("x" * 300)
    with pytest.raises(ValueError, match="no pretrained encoder named 'xxxx"):
        SPTClassifier(pretrainer="x" * 300).fit(*make_panel(n=8, c=1, t=16))


def test_available_lists_regular_files_only(shipped):
    folder, _ = shipped
    os.symlink(folder / "loop.sktspt", folder / "loop.sktspt")  # a symlink loop
    os.symlink(os.devnull, folder / "null.sktspt")
    (folder / "dir.sktspt").mkdir()
    for name in ("loop", "null", "dir"):
        shutil.copy(folder / "mine.json", folder / f"{name}.json")
    assert available() == ["mine"]
    for name in ("loop", "null", "dir"):
        with pytest.raises(ValueError, match=f"no pretrained encoder named '{name}'"):
            pretrained(name)
    assert np.isfinite(pretrained("mine").transform(make_panel(n=2, c=1, t=16)[0])).all()
