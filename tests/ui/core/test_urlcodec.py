"""The shareable link: configuration <-> URL token."""

from __future__ import annotations

import base64
import json
import zlib

import pytest

from calculators.config import ConfigError
from calculators.presets import production_2020
from ui.core import urlcodec


def test_round_trip_keeps_every_key_and_the_targets():
    cfg = production_2020().updated(max_race_codes=3, reader="csv", state_filter_us=["11", "06"])
    token = urlcodec.encode(cfg, {"(COUNTY, 2)": 7, "(USA, 1)": 50})
    back, targets = urlcodec.decode(token)
    assert back.to_dict() == cfg.to_dict()
    assert back.state_filter_us == ["11", "06"] and back.max_race_codes == 3
    assert targets == {"(COUNTY, 2)": 7, "(USA, 1)": 50}


def test_token_is_url_safe_and_short():
    token = urlcodec.encode(production_2020())
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert len(token) < 1500


@pytest.mark.parametrize("token", ["", "not base64 !!", "eNoLycgsVgCi4ozSHAA", "AAAA"])
def test_damaged_token_is_a_plain_words_config_error(token):
    with pytest.raises(ConfigError) as err:
        urlcodec.decode(token)
    assert err.value.problems and all(isinstance(p, str) for p in err.value.problems)


def test_cut_off_token_says_so():
    token = urlcodec.encode(production_2020())
    with pytest.raises(ConfigError) as err:
        urlcodec.decode(token[: len(token) // 2])
    assert "damaged" in err.value.problems[0]


def _raw_token(payload) -> str:
    raw = json.dumps(payload).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw)).decode().rstrip("=")


def test_invalid_configuration_in_link_lists_its_problems():
    data = production_2020().to_dict()
    data["max_race_codes"] = 12
    data["privacy_budget_p_stage_1_fraction"] = 1.5
    with pytest.raises(ConfigError) as err:
        urlcodec.decode(_raw_token({"v": 1, "c": data}))
    text = " ".join(err.value.problems)
    assert "max_race_codes" in text and "1 to 8" in text
    assert "privacy_budget_p_stage_1_fraction" in text


def test_other_version_and_bad_targets():
    data = production_2020().to_dict()
    with pytest.raises(ConfigError, match="version"):
        urlcodec.decode(_raw_token({"v": 99, "c": data}))
    _cfg, targets = urlcodec.decode(_raw_token({"v": 1, "c": data, "t": {"(COUNTY, 2)": 9, "(USA, 2)": 3.0}}))
    assert targets == {"(COUNTY, 2)": 9, "(USA, 2)": 3}
    # a bad target refuses the link, each named (issue 21, item 1: never dropped silently)
    with pytest.raises(ConfigError) as err:
        urlcodec.decode(_raw_token({"v": 1, "c": data, "t": {"(COUNTY, 2)": 9, "(MOON, 2)": 3,
                                                            "(TRACT, 2)": "x", "(USA, 2)": 0}}))
    assert err.value.problems == [
        'MOE target "(MOON, 2)": not a population group level written as "(COUNTY, 2)"',
        'MOE target of (TRACT, 2) must be a number of persons (got "x")',
        "MOE target of (USA, 2) must be from 1 to 1,000,000,000,000 persons (got 0)"]


def test_a_key_given_twice_in_a_link_is_refused_not_resolved_silently():
    text = json.dumps({"v": 1, "c": production_2020().to_dict(), "t": {"(COUNTY, 2)": 9}})
    twice = text.replace('"max_race_codes": 8', '"max_race_codes": 8, "max_race_codes": 3', 1)
    assert twice != text
    token = base64.urlsafe_b64encode(zlib.compress(twice.encode(), 9)).decode().rstrip("=")
    with pytest.raises(ConfigError) as err:
        urlcodec.decode(token)
    assert err.value.problems == ['the key "max_race_codes" appears more than once']


def test_share_url():
    assert urlcodec.share_url("http://h:1/configuration", "T", page="configuration") == "http://h:1/?config=T"
    assert urlcodec.share_url("http://h:1/", "T") == "http://h:1/?config=T"
    assert urlcodec.share_url(None, "T") == "?config=T"


def _token(text: str) -> str:
    return base64.urlsafe_b64encode(zlib.compress(text.encode(), 9)).decode().rstrip("=")


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deeply_nested_link_or_text_is_refused_before_parsing(depth):
    nested = "[" * depth + "]" * depth
    with pytest.raises(ConfigError) as err:
        urlcodec.decode(_token('{"v": 1, "c": ' + nested + "}"))
    assert f"nested {depth + 1:,} levels deep" in err.value.problems[0]
    with pytest.raises(ConfigError) as err:
        urlcodec.config_from_text('{"max_race_codes": ' + nested + "}", "pasted text")
    assert "nested" in err.value.problems[0] and err.value.source == "pasted text"


def test_brackets_inside_strings_do_not_count_and_a_real_config_passes():
    assert urlcodec.json_depth('{"a": "[[[[{{{{\\"]]", "b": [[1]]}') == 3
    cfg = production_2020()
    assert urlcodec.config_from_text(cfg.to_json(), "pasted text").to_dict() == cfg.to_dict()


def test_oversized_text_is_refused_with_its_size():
    with pytest.raises(ConfigError) as err:
        urlcodec.config_from_text(" " * (urlcodec.MAX_PAYLOAD + 1), "config.json")
    assert "1,000,001 characters" in err.value.problems[0]


def test_a_budget_a_float_cannot_hold_in_a_link_is_refused():
    text = json.dumps({"v": 1, "c": production_2020().to_dict()})
    tiny = text.replace('"privacy_budget_p_level_2_usa": 2.134', '"privacy_budget_p_level_2_usa": 1e-400', 1)
    assert tiny != text
    token = base64.urlsafe_b64encode(zlib.compress(tiny.encode(), 9)).decode().rstrip("=")
    with pytest.raises(ConfigError) as err:
        urlcodec.decode(token)
    assert err.value.problems[0].startswith('"privacy_budget_p_level_2_usa": 1e-400 cannot be used exactly')
