"""The Run page's "Everything (zip)" is marked NOT FOR RELEASE whatever the noise (issue 42
item 4e): it holds exact per-group counts (accuracy/error_report.csv), so a secure run's
zip carries NOT-FOR-RELEASE.txt too, as README says every such zip does. One secure and
one seeded run on the engine tests' small hand-built inputs."""

from __future__ import annotations

import io
import zipfile

import pandas as pd
import pytest

from calculators.config import SafeTabConfig
from ui.safetab import run_report, runner
from tests.engine.conftest import BLOCKS, Dataset, person


@pytest.fixture(scope="module")
def ds(tmp_path_factory) -> Dataset:
    ds = Dataset(tmp_path_factory.mktemp("in") / "in")
    ds.persons = [person(age=20 + i % 60, sex=1 + i % 2, block=BLOCKS[i % 6], races=[("1010",), ("1020",)][i % 2])
                  for i in range(60)]
    return ds.write()


def _everything(ds: Dataset, tmp_path, seed) -> zipfile.ZipFile:
    cfg = SafeTabConfig.read(ds.params / "config.json")
    out = runner.run_with_truth(ds.params, ds.data, cfg, tmp_path / "w", seed=seed)
    runner.accuracy(out, tmp_path / "acc", 2)  # as "Compute the accuracy report" does: both layouts
    return zipfile.ZipFile(io.BytesIO(run_report.everything_zip(out, runner.production_reports(tmp_path / "acc"))))


@pytest.mark.parametrize("seed", [None, 5])
def test_everything_zip_with_exact_group_sizes_is_marked_not_for_release(ds, tmp_path, seed):
    z = _everything(ds, tmp_path, seed)
    names = z.namelist()
    assert len(names) == len(set(names))  # one marker, not two, for a seeded release
    # the exact size of every released group of the first trial is in it
    sizes = pd.read_csv(io.BytesIO(z.read("accuracy/error_report.csv")), sep=None, engine="python")
    assert len(sizes) > 0
    for where in ("NOT-FOR-RELEASE.txt", "accuracy/NOT-FOR-RELEASE.txt"):
        assert where in names
        assert z.read(where).decode().startswith("NOT FOR RELEASE")
    top = z.read("NOT-FOR-RELEASE.txt").decode()
    if seed is None:  # the release itself is for release; the zip is not, and says why
        assert "error_report.csv" in top and "exact size" in top
    else:  # the seeded release's own marker
        assert "error_report.csv" not in top
