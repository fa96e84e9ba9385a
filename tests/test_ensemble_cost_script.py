"""``benchmarks/ensemble_cost.py``: fit time of ensembles against one network."""

import torch
from conftest import load_benchmark

from sktspt.nn.ensemble import Ensemble


def test_member_loop_switches_the_stacked_path_off_and_back():
    script = load_benchmark("ensemble_cost")
    ens = Ensemble(torch.nn.Linear, 2, in_features=1, out_features=1)
    stackable = Ensemble.stackable
    with script.member_loop(True):
        assert Ensemble.stackable is not stackable
    assert Ensemble.stackable is stackable
    with script.member_loop(False):
        assert Ensemble.stackable is stackable
    assert not ens.stackable()  # members that are not the library's models never stack


def test_the_table_has_a_row_per_fit(capsys):
    script = load_benchmark("ensemble_cost")
    script.main(["--datasets", "ItalyPowerDemand", "--members", "1", "2", "--steps", "4",
                 "--loop"])
    rows = [line for line in capsys.readouterr().out.splitlines() if "ItalyPowerDemand" in line]
    assert [r.split("|")[4].strip() for r in rows] == ["one network", "stacked", "loop"]
    assert rows[0].split("|")[6].strip() == "1.00"
