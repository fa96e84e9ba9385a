"""Files saved by sktspt before 0.3 are refused, naming the version that reads them.

``tests/data/pretrainer-0.1.0.sktspt`` was written by sktspt 0.1.0 (commit 8244789),
``tests/data/classifier-0.2.0.sktspt`` by sktspt 0.2.0 (commit e9e8c0b; a two-member
ensemble). sktspt 0.4 reads both; this version reads files of 0.3 and later (0.4 stamped
its files "0.3.0"), such as the shipped encoder (``tests/test_pretrained.py``).
"""

from pathlib import Path

import pytest

import sktspt

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("name, version", [("pretrainer-0.1.0", "0.1.0"),
                                           ("classifier-0.2.0", "0.2.0")])
def test_a_file_saved_before_0_3_is_refused_naming_the_version_that_reads_it(name, version):
    with pytest.raises(ValueError, match=rf"saved by sktspt {version}; this sktspt .* reads "
                                         r"files of sktspt 0\.3 and later\. Load it with "
                                         r"sktspt 0\.4, which reads it"):
        sktspt.load(DATA / f"{name}.sktspt")


def test_the_shipped_encoder_saved_by_0_4_loads():
    from sktspt.pretrained import FOLDER

    pre = sktspt.load(FOLDER / "archive.sktspt")
    assert pre.pretrain_epochs_ > 0 and pre.tokenizer__length == 256
