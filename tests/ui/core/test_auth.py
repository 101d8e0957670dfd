"""Who is an operator, who a user is, and what a refusal says (ui.core.auth, its pure parts)."""

from __future__ import annotations

from ui.committee import scenarios
from ui.core import auth


def test_operators_come_from_secrets_and_the_environment_whatever_their_case():
    secrets = {"studio": {"operators": ["Ana@Example.org", " cy@example.org "]}}
    env = {auth.ENV_OPERATORS: "bo@example.org,dee@example.org ; EVE@example.org"}
    assert auth.operators(secrets, env) == {"ana@example.org", "cy@example.org", "bo@example.org",
                                            "dee@example.org", "eve@example.org"}
    assert auth.operators({"studio": {"operators": "ana@example.org bo@example.org"}}, {}) == \
        {"ana@example.org", "bo@example.org"}
    assert auth.operators({}, {}) == frozenset() and auth.operators({"studio": "not a section"}, {}) == frozenset()


def test_a_user_is_an_operator_only_by_a_listed_email():
    ops = frozenset({"ana@example.org"})
    ana = auth.user_from_claims({"email": "ANA@example.org", "name": "Ana"}, ops)
    assert (ana.operator, ana.who, ana.role, ana.local) == (True, "ANA@example.org", "operator", False)
    bo = auth.user_from_claims({"email": "bo@example.org"}, ops)
    assert not bo.operator and bo.who == "bo@example.org"
    # a token without an e-mail is never an operator, even if its name looks like one
    nameless = auth.user_from_claims({"name": "ana@example.org", "sub": "123"}, ops)
    assert not nameless.operator and nameless.who == "ana@example.org"
    assert auth.user_from_claims({"sub": "123"}, ops).who == "123"


def test_local_mode_is_the_operator_recorded_as_local():
    assert auth.LOCAL_USER.operator and auth.LOCAL_USER.local
    assert auth.LOCAL_USER.who == auth.LOCAL == scenarios.LOCAL  # what the store records
    assert auth.refusal(auth.PURGE, auth.LOCAL_USER) is None


def test_a_refusal_says_what_who_and_how_to_become_an_operator():
    bo = auth.user_from_claims({"email": "bo@example.org"}, frozenset())
    why = auth.refusal(auth.UPLOAD_INPUTS, bo)
    assert why.startswith("Only an operator may upload person or GRF-C files. You are signed in as bo@example.org")
    assert "[studio] operators" in why and auth.ENV_OPERATORS in why


def test_providers_of_an_auth_section():
    assert auth.providers({"client_id": "x", "redirect_uri": "r"}) == [None]
    assert auth.providers({"redirect_uri": "r", "google": {"client_id": "g"}, "microsoft": {"client_id": "m"},
                           "client_kwargs": {"prompt": "login"}}) == ["google", "microsoft"]
