"""The share link carries the SafeTab-H plan beside SafeTab-P's (issue 45 item 4)."""

from __future__ import annotations

import base64
import json
import zlib

import pytest

from calculators.config import ConfigError
from calculators.presets import production_2020
from calculators.safetab_h import BUDGET_KEYS, production_2020_h
from ui.core import urlcodec


def _changed_h():
    key = sorted(BUDGET_KEYS)[0]
    return production_2020_h().updated(**{key: 0.25}), key


def test_a_safetab_h_plan_travels_with_the_link():
    h, key = _changed_h()
    decoded = urlcodec.decode(urlcodec.encode(production_2020(), {}, name="Plan B", h_config=h))
    assert decoded.h_config is not None
    assert decoded.h_config.to_dict() == h.to_dict()
    assert decoded.h_config.budgets[key] == 0.25
    assert decoded.name == "Plan B"
    assert decoded[0].to_dict() == production_2020().to_dict()


def test_links_without_a_safetab_h_plan_decode_as_before():
    decoded = urlcodec.decode(urlcodec.encode(production_2020()))
    assert decoded.h_config is None


def test_a_bad_safetab_h_plan_in_a_link_is_refused_in_words():
    payload = {"v": urlcodec.VERSION, "c": production_2020().to_dict(), "h": {**production_2020_h().to_dict(),
                                                                         "max_race_codes": "eight"}}
    raw = json.dumps(payload).encode("utf-8")
    token = base64.urlsafe_b64encode(zlib.compress(raw)).decode("ascii").rstrip("=")
    with pytest.raises(ConfigError) as err:
        urlcodec.decode(token)
    assert "SafeTab-H" in str(err.value.source) and err.value.problems
