"""`accuracy --safetab-h`: the empirical 95th percentile of |error| of the directly
noised cells matches the expected MOE over seeded trials."""

from __future__ import annotations

import pandas as pd
import pytest

from calculators import discrete_gaussian
from calculators.safetab_h import BUDGET_KEYS
from engine.cli import main
from engine.safetab_h.accuracy import accuracy_h, band_label, size_band


def test_size_bands_are_powers_of_ten():
    assert list(size_band([0, 1, 9, 10, 99, 100, 12345])) == [0, 1, 1, 2, 2, 3, 5]
    assert [band_label(b) for b in (0, 1, 3)] == ["0", "1-9", "100-999"]


def test_p95_of_the_errors_is_the_expected_moe(hdata, tmp_path):
    for k in BUDGET_KEYS:
        hdata.config[k] = 0.01  # sigma^2 = 9 / 0.02 = 450: MOE about 42
    hdata.write()
    df = accuracy_h(hdata.params, hdata.data, tmp_path / "acc", trials=150, seed=11)
    moe = int(discrete_gaussian.moe(450.0))
    assert (df["expected_moe_exact"] == moe).all()
    assert df["expected_moe_design"].iloc[0] == pytest.approx(1.96 * 450 ** 0.5)
    big = df[df["cells"] * df["trials"] >= 750]
    assert len(big) >= 3
    # the p95 of >= 750 draws: standard error under 1.6 households here; 6 is about 4 of them
    assert ((big["p95_abs_error"] - moe).abs() <= 6).all(), big
    assert (big["mean_error"].abs() < 3).all()
    on_disk = pd.read_csv(tmp_path / "acc" / "accuracy_h.csv")
    assert len(on_disk) == len(df) and (tmp_path / "acc" / "NOT-FOR-RELEASE.txt").is_file()
    # every group of the hand-made set has 9 or 10 households: band 10-99 or 1-9
    assert set(df["group_size"]) <= {"1-9", "10-99"}


def test_command_line(hdata, tmp_path, capsys):
    hdata.write()
    out = tmp_path / "a"
    assert main(["accuracy", str(hdata.params), str(hdata.data), str(out), "--safetab-h", "--trials", "3",
                 "--seed", "1", "--quiet"]) == 0
    assert "accuracy_h.csv" in capsys.readouterr().out
    assert main(["accuracy", str(hdata.params), str(hdata.data), str(tmp_path / "b"), "--safetab-h",
                 "--jobs", "2", "--quiet"]) == 2
    assert "--jobs cannot be used with --safetab-h" in capsys.readouterr().err
