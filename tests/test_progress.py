"""What ``verbose`` shows per phase, and callbacks that reach pretraining."""

import re

import numpy as np
import pytest
from skorch.callbacks import Callback

from sktspt import SPTClassifier, SPTPretrainer
from sktspt.progress import PhaseProgress, strip_ansi
from sktspt.training import AugmentedNetClassifier, MaskedPretrainNet

TINY = dict(depth=1, d_model=8, architecture__n_heads=2, architecture__dim_feedforward=8,
            architecture__dropout=0.0, random_state=0,
            batch_size=8)
ANSI = re.compile(r"\x1b\[")


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    return rng.normal(size=(20, 2, 12)), np.arange(20) % 2


def test_verbose_1_shows_one_labelled_bar_per_phase_with_losses(data, capsys):
    X, y = data
    SPTClassifier(pretrain_epochs=2, max_epochs=3, verbose=1, validation_fraction=0.2,
                  **TINY).fit(X, y)
    out, err = capsys.readouterr()
    assert out == ""  # no skorch table
    assert "pretraining" in err and "fine-tuning" in err
    assert err.index("pretraining") < err.index("fine-tuning")
    assert "2/2" in err and "3/3" in err  # epochs of each phase
    assert "train_loss=" in err and "valid_loss=" in err
    assert "epoch/s" in err or "s/epoch" in err  # tqdm's rate, with elapsed and left times
    assert not ANSI.search(err)  # captured output is not a terminal


def test_verbose_2_keeps_the_table_under_a_header_per_phase(data, capsys):
    X, y = data
    SPTClassifier(pretrain_epochs=2, max_epochs=2, verbose=2, **TINY).fit(X, y)
    out, _ = capsys.readouterr()
    lines = out.splitlines()
    assert lines.index("--- pretraining ---") < lines.index("--- fine-tuning ---")
    assert sum("train_loss" in line for line in lines) == 2  # one table header per phase
    assert not ANSI.search(out)  # skorch's colours are dropped off a terminal


def test_verbose_0_is_silent(data, capsys):
    X, y = data
    SPTClassifier(pretrain_epochs=1, max_epochs=1, **TINY).fit(X, y)
    assert capsys.readouterr() == ("", "")


def test_progress_bar_on_a_pipe_writes_no_escape_codes(tmp_path):
    class Net:
        history = []

    path = tmp_path / "log.txt"
    with open(path, "w") as f:
        bar = PhaseProgress("pretraining", 2, file=f)
        bar.on_train_begin(Net())
        Net.history = [{"train_loss": 1.0}]
        bar.on_epoch_end(Net())
        bar.on_train_end(Net())
    text = path.read_text()
    assert "pretraining" in text and "train_loss=1.0000" in text
    assert not ANSI.search(text)
    assert strip_ansi("\x1b[32m0.5\x1b[0m") == "0.5"


class Recorder(Callback):
    def __init__(self):
        self.nets = []

    def on_epoch_end(self, net, **kwargs):
        self.nets.append(type(net))


def test_pretrain_callbacks_reach_pretraining_and_callbacks_fine_tuning(data):
    X, y = data
    pre, fine = Recorder(), Recorder()
    SPTClassifier(pretrain_epochs=2, max_epochs=3, callbacks=[fine], pretrain__callbacks=[pre],
                  **TINY).fit(X, y)
    assert pre.nets == [MaskedPretrainNet] * 2
    assert fine.nets == [AugmentedNetClassifier] * 3


def test_pretrainer_callbacks_reach_its_pretraining(data):
    X, _ = data
    rec = Recorder()
    SPTPretrainer(pretrain_epochs=2, callbacks=[rec], **TINY).fit(X)
    assert rec.nets == [MaskedPretrainNet] * 2


def test_pretrain_callbacks_must_be_a_list(data):
    X, y = data
    with pytest.raises(TypeError, match="pretrain__callbacks must be None or a list"):
        SPTClassifier(pretrain__callbacks=Recorder(), **TINY).fit(X, y)
