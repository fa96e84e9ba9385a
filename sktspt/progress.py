"""What ``verbose`` shows while fitting: a progress bar or skorch's table, per phase.

- ``verbose=1``: one progress bar per phase ("pretraining", "fine-tuning") over its
  epochs, with the latest losses and the time left (:class:`PhaseProgress`, on tqdm).
- ``verbose=2``: skorch's per-epoch table, under a header line naming the phase
  (:class:`PhaseTable`).

Neither writes ANSI escape codes (skorch's table colours the best values) unless the
output is a terminal.
"""

from __future__ import annotations

import re
import sys

from skorch.callbacks import Callback, PrintLog

__all__ = ["PhaseProgress", "PhaseTable", "strip_ansi"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences (colours, cursor moves)."""
    return _ANSI.sub("", text)


def _is_terminal(stream) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


class PhaseProgress(Callback):
    """A tqdm progress bar over the epochs of one training phase.

    The bar is labelled with ``phase``, shows the latest ``train_loss`` and
    ``valid_loss`` and, from tqdm, the time elapsed and left. It writes to ``sys.stderr``
    (``file``); on a stream that is not a terminal it writes a plain line per update,
    without ANSI codes or carriage-return redraws.

    Parameters
    ----------
    phase : str
        Name shown at the left of the bar.
    total : int
        Epochs the phase will run (the bar's length).
    file : file-like or None, default=None
        Where to write; None is ``sys.stderr`` at the time training begins.
    """

    def __init__(self, phase: str, total: int, file=None):
        self.phase = phase
        self.total = total
        self.file = file

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        from tqdm import tqdm

        file = sys.stderr if self.file is None else self.file
        terminal = _is_terminal(file)
        self.bar_ = tqdm(
            total=self.total, desc=self.phase, unit="epoch", file=file, leave=True,
            initial=len(net.history), dynamic_ncols=terminal, ascii=not terminal,
            # Off a terminal, a new line every 10 s at most instead of redraws.
            mininterval=0.1 if terminal else 10.0, ncols=None if terminal else 100,
        )

    def on_epoch_end(self, net, **kwargs):
        bar = getattr(self, "bar_", None)
        if bar is None:
            return
        row = net.history[-1]
        losses = {k: f"{row[k]:.4f}" for k in ("train_loss", "valid_loss") if k in row}
        bar.set_postfix(losses, refresh=False)
        bar.update(1)

    def on_train_end(self, net, X=None, y=None, **kwargs):
        bar = getattr(self, "bar_", None)
        if bar is not None:
            bar.close()
            self.bar_ = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("bar_", None)  # an open bar holds a stream; it cannot be pickled
        return state


class PhaseTable(PrintLog):
    """skorch's ``PrintLog`` table under a header line that names the phase.

    ANSI colours (skorch marks the best values with them) are dropped when ``sys.stdout``
    is not a terminal, so logs written to files or pipes stay plain text.
    """

    def __init__(self, phase: str = "", keys_ignored=None, sink=print, tablefmt="simple",
                 floatfmt=".4f", stralign="right"):
        super().__init__(keys_ignored=keys_ignored, sink=sink, tablefmt=tablefmt,
                         floatfmt=floatfmt, stralign=stralign)
        self.phase = phase

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        if self.phase:
            self._sink(f"--- {self.phase} ---", verbose=True)

    def _sink(self, text, verbose):
        if verbose and text:
            self.sink(text if self.sink is not print or _is_terminal(sys.stdout)
                      else strip_ansi(text))
