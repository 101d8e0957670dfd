"""Sign-in and roles as the app applies them (AppTest: `at.secrets` holds an ``[auth]``
section, `at.user` the signed-in user's ID-token claims, as `st.user` gives them). The real
sign-in round trip against an OpenID Connect provider is tests/e2e/test_auth.py."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import APP, SAMPLE, page_script, shown, texts
from ui.committee import scenarios
from ui.core import auth
from ui.safetab import projection as pj

OPERATOR = {"is_logged_in": True, "email": "Ana@Example.org", "name": "Ana Operator"}
MEMBER = {"is_logged_in": True, "email": "bo@example.org", "name": "Bo Member"}
AUTH = {"redirect_uri": "http://127.0.0.1:8501/oauth2callback", "cookie_secret": "x" * 32, "client_id": "studio",
        "client_secret": "s", "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration"}


@pytest.fixture(autouse=True)
def _own_store_and_no_operator_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(scenarios.ENV_DATA, str(tmp_path / "data"))
    monkeypatch.delenv(auth.ENV_OPERATORS, raising=False)


def _session(user: dict, page: str | None = None, operators=("ana@example.org",)) -> AppTest:
    """A session of a server whose secrets.toml has [auth] and names the operators."""
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.secrets["auth"] = dict(AUTH)
    at.secrets["studio"] = {"operators": list(operators)}
    at.user = dict(user)
    at.run()
    if page:
        at.switch_page(page_script(page)).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _infos(at) -> str:
    return " ".join(shown(i.value) for i in at.info)


@pytest.mark.parametrize("page", [None, "run", "scenarios", "budget"])
def test_without_a_session_every_page_shows_only_the_sign_in(page):
    at = _session({"is_logged_in": False}, page)
    assert [b.label for b in at.button] == ["Sign in"]
    assert "This server is shared by a committee" in texts(at)
    assert not at.sidebar.button and not at.get("file_uploader") and not at.tabs
    assert "Run the mechanism" not in texts(at) and "Scenarios" not in [t.value for t in at.title]


def test_a_signed_in_member_is_named_and_may_plan_and_save(tmp_path):
    at = _session(MEMBER, "scenarios")
    side = " ".join(shown(m.value) for m in at.sidebar.markdown)
    assert "Signed in as **Bo Member** (bo@example.org) · member" in side
    assert [b.label for b in at.sidebar.button if b.key == "auth_logout"] == ["Sign out"]
    assert "Signed in as bo@example.org (member): your changes are recorded under this name" in texts(at)
    assert "Local mode" not in _infos(at)
    at.text_input(key="sc_name").set_value("Bo's plan").run()
    at.button(key="sc_save").click().run()
    (v,) = scenarios.ScenarioStore().history("Bo's plan")
    assert (v.action, v.author) == ("create", "bo@example.org")


def test_a_member_is_refused_uploads_and_true_counts_on_the_run_page_and_told_why():
    at = _session(MEMBER, "run")
    at.radio(key="run_source").set_value("upload").run()
    assert not at.get("file_uploader")
    why = _infos(at)
    assert ("Only an operator may upload person or GRF-C files. You are signed in as bo@example.org, who is not "
            "one; operators are named by e-mail in the server's .streamlit/secrets.toml ([studio] operators) or in "
            "the environment variable SAFETAB_STUDIO_OPERATORS.") in why


def test_an_operator_named_in_secrets_or_the_environment_may_upload(monkeypatch):
    at = _session(OPERATOR, "run")  # named in secrets, whatever the case of the e-mail
    at.radio(key="run_source").set_value("upload").run()
    assert len(at.get("file_uploader")) == 1 and "Only an operator" not in _infos(at)
    monkeypatch.setenv(auth.ENV_OPERATORS, "someone@else.org, BO@example.org")
    at = _session(MEMBER, "run", operators=())
    at.radio(key="run_source").set_value("upload").run()
    assert len(at.get("file_uploader")) == 1


@pytest.mark.skipif(not (SAMPLE / "params").is_dir(), reason="no shipped sample data")
def test_a_member_sees_the_release_but_not_the_true_counts_of_a_run():
    at = _session(MEMBER, "run")
    at.radio(key="run_noise").set_value("seeded").run()
    at.text_input(key="run_seed").input("3").run()
    at.button(key="run_button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["run"] is not None
    assert "Only an operator may see confidential true counts (Browse" in _infos(at)
    assert "br_geo" not in at.session_state and "acc_button" not in [b.key for b in at.button]  # no Browse
    assert "Truth against release" not in texts(at)
    labels = {b.proto.label: b.proto.disabled for b in at.get("download_button")}
    assert labels["Everything (zip)"] and labels["Operator file (CONFIDENTIAL)"] and not labels["T1 files (zip)"]


def _profile_bytes(confidential: bool) -> bytes:
    d = json.loads((SAMPLE / "profiles" / "sample.profile.json").read_text(encoding="utf-8"))
    d["synthetic"], d["confidential"] = not confidential, confidential
    return json.dumps(d).encode()


@pytest.mark.skipif(not (SAMPLE / "profiles").is_dir(), reason="no shipped profiles")
def test_a_member_may_load_a_synthetic_profile_but_not_a_confidential_one():
    at = _session(MEMBER, "budget")
    at.session_state["pl_nat_profile_pop"] = True
    at.run()
    at.get("file_uploader")[0].upload("agency.profile.json", _profile_bytes(True), "application/json").run()
    errors = " ".join(shown(e.value) for e in at.error)
    assert "Only an operator may upload or use a confidential group-size profile" in errors
    assert "proj_uploaded" not in at.session_state  # dropped at once, never used
    at.get("file_uploader")[0].upload("invented.profile.json", _profile_bytes(False), "application/json").run()
    assert at.session_state["proj_choice"] == pj.UPLOADED and not at.session_state["proj_uploaded"].confidential


def test_only_an_operator_may_purge_a_deleted_scenario():
    from calculators.presets import production_2020

    store = scenarios.ScenarioStore()
    store.save("Old", production_2020(), by="bo@example.org")
    store.delete("Old", by="bo@example.org")
    at = _session(MEMBER, "scenarios")
    at.session_state["sc_deleted_open"] = True
    at.run()
    assert "sc_purge" not in [b.key for b in at.button]
    assert "Only an operator may purge a deleted scenario" in _infos(at)
    at.button(key="sc_restore").click().run()  # anyone may restore
    assert store.names() == ["Old"] and store.history("Old")[0].author == "bo@example.org"
    store.delete("Old", by="bo@example.org")
    at = _session(OPERATOR, "scenarios")
    at.session_state["sc_deleted_open"] = True
    at.run()
    at.checkbox(key="sc_purge_sure").check().run()
    at.button(key="sc_purge").click().run()
    assert store.deleted() == [] and store.purged()[0][3] == "Ana@Example.org"
    assert "Purged for good: “Old” (4 versions) by Ana@Example.org" in shown(texts(at))


def test_a_secrets_file_that_cannot_be_read_never_falls_back_to_local_mode(tmp_path, monkeypatch):
    import streamlit as st
    from streamlit import config
    from streamlit.runtime.secrets import Secrets

    broken = tmp_path / "secrets.toml"
    broken.write_text("[auth\nclient_id = 'x'\n", encoding="utf-8")
    monkeypatch.setattr(st, "secrets", Secrets())
    old = config.get_option("secrets.files")
    config.set_option("secrets.files", [str(broken)])
    try:
        with pytest.raises(auth.AuthSetupError, match="secrets.toml"):
            auth.signing_in()
        config.set_option("secrets.files", [str(tmp_path / "none.toml")])
        monkeypatch.setattr(st, "secrets", Secrets())
        assert auth.signing_in() is False and auth.current() is auth.LOCAL_USER  # no file: local mode
    finally:
        config.set_option("secrets.files", old)
