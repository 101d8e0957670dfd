"""The Run page's post-processing choices (`ui.safetab.runner`): they reach the release,
its accuracy trials, and the words the page shows."""

from __future__ import annotations

import json

from engine.run import NO_PAIRS_NOTE
from tests.engine.conftest import BLOCKS, Dataset, base_config, person
from ui.safetab import runner


def test_choices_reach_the_release_and_the_accuracy_trials(tmp_path):
    ds = Dataset(tmp_path / "in", config=base_config(**{k: 0.05 for k in base_config()
                                                        if k.startswith("privacy_budget_p_level")}))
    ds.persons = [person(block=b, races=(("1010",), ("1010", "1020"))[i % 2]) for i, b in enumerate(BLOCKS * 4)]
    ds.write()
    from calculators.config import SafeTabConfig

    cfg = SafeTabConfig.read(ds.params / "config.json")
    out = runner.run_with_truth(ds.params, ds.data, cfg, tmp_path / "work", seed=4, coterminous=False,
                                tabulation_suppression=True)
    post = out.manifest["postprocessing"]
    assert post["coterminous"] is False and "coterminous_result" not in post
    text, note = runner.tabulation_summary(out.manifest)
    removed = post["tabulation_suppression"]["groups_removed"]
    assert note is None and sum(removed.values()) > 0
    assert all(f"**{n:,}** groups removed by {runner.RULE_WORDS[r]}" in text for r, n in removed.items())
    # the removed groups are in the page's table as suppressed, once each
    assert out.t1.duplicated(["REGION_TYPE", "REGION_ID", "ITERATION_CODE"]).sum() == 0
    assert int(out.t1["SUPPRESSED"].sum()) == out.manifest["outputs"]["rows"]["suppressed"]
    runner.accuracy(out, tmp_path / "acc", 1)
    mode = json.loads((tmp_path / "acc" / "accuracy.json").read_text())["mode"]
    assert mode["tabulation_suppression"]["trials"] == 1
    # a run without the rules says nothing about them, and its words name the released code
    assert runner.tabulation_summary({"postprocessing": {"tabulation_suppression": False}}) is None
    assert "released SafeTab-P code" in runner.postprocessing_words(False, False)
    assert "paper's coterminous step" in runner.postprocessing_words(True, True)
    assert runner.tabulation_summary({"postprocessing": {"tabulation_suppression": {
        "groups_removed": {"nonnegativity": 0}, "pairs": 0, "pairs_note": NO_PAIRS_NOTE}}})[1] == NO_PAIRS_NOTE
