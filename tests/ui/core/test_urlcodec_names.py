"""Share links keep the plan's name (ui.core.urlcodec "n" / "e")."""

from __future__ import annotations

from calculators.presets import production_2020
from ui.core import urlcodec


def test_the_name_and_edited_flag_travel_with_the_link():
    cfg = production_2020().updated(max_race_codes=3)
    tok = urlcodec.encode(cfg, {"(COUNTY, 2)": 8}, name="Committee plan B", edited=True)
    got = urlcodec.decode(tok)
    c, t = got  # still unpacks as (config, targets)
    assert c.to_dict() == cfg.to_dict() and t == {"(COUNTY, 2)": 8}
    assert got.name == "Committee plan B" and got.edited is True


def test_links_without_a_name_decode_as_before():
    got = urlcodec.decode(urlcodec.encode(production_2020()))
    assert got.name is None and got.edited is False and len(got) == 2


def test_names_are_cleaned_and_bounded():
    tok = urlcodec.encode(production_2020(), name="  a\x00b\n  plan " + "x" * 200)
    name = urlcodec.decode(tok).name
    assert name.startswith("ab plan x") and len(name) == urlcodec.MAX_NAME
    assert urlcodec.decode(urlcodec.encode(production_2020(), name="   ")).name is None
