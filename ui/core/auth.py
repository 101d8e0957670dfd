"""Who is signed in, and what they may do (issue 42).

Two modes, chosen by ``.streamlit/secrets.toml``:

* **Sign-in** — the file has an ``[auth]`` section (OpenID Connect, Streamlit's
  ``st.login``: ``redirect_uri``, ``cookie_secret``, ``client_id``, ``client_secret``,
  ``server_metadata_url``, or one sub-section per provider). Every page asks for sign-in
  first (`gate`, called by app.py before the navigation); the user is the ID token's
  ``email`` (else its ``name``, else its ``sub``).
* **Local mode** — no ``[auth]``: the app runs for one person on their own machine, as
  before; that person is the operator and the changes they make are recorded as by
  `LOCAL`.

Roles: *operators* are named by e-mail, in secrets (``[studio] operators = ["a@x.org"]``)
or in the environment variable `ENV_OPERATORS` (comma or space separated); both lists
count, case does not. Only an operator may upload person or GRF-C files on the Run page,
upload or use a confidential group-size profile, see confidential true counts (Browse, the
accuracy downloads) and purge a deleted scenario; every signed-in user may plan, compare,
save scenarios and make memos from the shipped or synthetic profiles. A refused action says
why (`refusal`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import streamlit as st

from ui.core.plaintext import plain

#: Environment variable naming the operators by e-mail (comma or space separated).
ENV_OPERATORS = "SAFETAB_STUDIO_OPERATORS"
#: The secrets section of the app's own settings: ``[studio] operators = [...]``.
SECRETS_SECTION = "studio"
#: Who makes the changes in local mode (the same word as `ui.committee.scenarios.LOCAL`).
LOCAL = "local"
#: The actions only an operator may take, in the words of a refusal ("Only an operator may ...").
UPLOAD_INPUTS = "upload person or GRF-C files"
CONFIDENTIAL_PROFILE = "upload or use a confidential group-size profile"
TRUE_COUNTS = "see confidential true counts"
ACCURACY = "download the accuracy reports (they hold every group's true count)"
PURGE = "purge a deleted scenario (remove it and its history for good)"


class AuthSetupError(RuntimeError):
    """The secrets file exists but cannot be read: the app must not fall back to local mode."""


@dataclass(frozen=True)
class User:
    """The person using this session."""

    email: str
    name: str
    operator: bool
    local: bool

    @property
    def who(self) -> str:
        """How their changes are recorded (`ui.committee.scenarios` versions)."""
        return LOCAL if self.local else (self.email or self.name or "a signed-in user")

    @property
    def role(self) -> str:
        return "operator" if self.operator else "member"


LOCAL_USER = User("", "", operator=True, local=True)


# ------------------------------------------------------------------ configuration
def _secrets() -> Mapping[str, Any]:
    """The parsed secrets ({} when there is no secrets file)."""
    try:
        from streamlit.errors import StreamlitSecretNotFoundError
    except ImportError:  # pragma: no cover - older Streamlit
        StreamlitSecretNotFoundError = FileNotFoundError  # noqa: N806
    try:
        return {k: st.secrets[k] for k in st.secrets}
    except StreamlitSecretNotFoundError as exc:
        if "no secrets found" in str(exc).lower():
            return {}
        raise AuthSetupError(str(exc)) from None  # a file that cannot be parsed: never local mode


def auth_section() -> Mapping[str, Any] | None:
    """The ``[auth]`` section of the secrets, or None (local mode). AuthSetupError if the
    secrets file cannot be read."""
    section = _secrets().get("auth")
    return section if isinstance(section, Mapping) else None


def signing_in() -> bool:
    """True when the app asks for sign-in (an ``[auth]`` section exists)."""
    return auth_section() is not None


def providers(section: Mapping[str, Any]) -> list[str | None]:
    """The identity providers of an ``[auth]`` section: [None] when it names the provider
    itself (``client_id`` at its top), else its sub-sections that do (``[auth.google]``...)."""
    if "client_id" in section:
        return [None]
    return [k for k, v in section.items() if isinstance(v, Mapping) and "client_id" in v] or [None]


def parse_operators(value: Any) -> frozenset[str]:
    """E-mail addresses from a list or a comma / space separated text, lower-cased."""
    items = value if isinstance(value, list | tuple) else re.split(r"[\s,;]+", str(value or ""))
    return frozenset(str(x).strip().lower() for x in items if str(x).strip())


def operators(secrets: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The operators' e-mails: ``[studio] operators`` of the secrets and `ENV_OPERATORS`."""
    secrets = _secrets() if secrets is None else secrets
    environ = os.environ if environ is None else environ
    section = secrets.get(SECRETS_SECTION)
    named = parse_operators(section.get("operators")) if isinstance(section, Mapping) else frozenset()
    return named | parse_operators(environ.get(ENV_OPERATORS, ""))


def user_from_claims(claims: Mapping[str, Any], ops: frozenset[str]) -> User:
    """A signed-in user from the ID token's claims (`st.user`)."""
    email = str(claims.get("email") or "").strip()
    name = str(claims.get("name") or claims.get("sub") or "").strip()
    return User(email, name, operator=bool(email) and email.lower() in ops, local=False)


def current() -> User:
    """The user of this session: `LOCAL_USER` in local mode, else the signed-in one (a
    user who is not signed in is not an operator)."""
    if not signing_in():
        return LOCAL_USER
    claims = st.user.to_dict() if st.user.is_logged_in else {}
    return user_from_claims(claims, operators())


def refusal(action: str, user: User | None = None) -> str | None:
    """Why `user` (default: the current one) may not take `action`, or None if they may."""
    user = current() if user is None else user
    if user.operator:
        return None
    who = user.email or user.name or "a user without an e-mail"
    return (f"Only an operator may {action}. You are signed in as {who}, who is not one; operators are named "
            f"by e-mail in the server's .streamlit/secrets.toml ([{SECRETS_SECTION}] operators) or in the "
            f"environment variable {ENV_OPERATORS}.")


def allowed(action: str, user: User | None = None) -> bool:
    """True if the current user may take `action`; otherwise the page says why (a lock
    message where the control would be) and this returns False."""
    why = refusal(action, user)
    if why is None:
        return True
    st.info(plain(why), icon=":material/lock:")
    return False


# ------------------------------------------------------------------ the pages
def gate() -> User:
    """Call in app.py before the navigation. Local mode: returns `LOCAL_USER`. With
    ``[auth]``: a session that is not signed in sees only the sign-in, whatever page
    address it opened (the script stops here); a signed-in one gets its `User`."""
    try:
        section = auth_section()
    except AuthSetupError as exc:
        st.error(plain(f"The server's secrets file cannot be read ({exc}). The app does not start without it "
                       "while one exists: fix or remove .streamlit/secrets.toml."))
        st.stop()
    if section is None:
        return LOCAL_USER
    if not st.user.is_logged_in:
        _sign_in(section)
        st.stop()
    return user_from_claims(st.user.to_dict(), operators())


def _sign_in(section: Mapping[str, Any]) -> None:
    st.title("SafeTab-P Studio")
    st.markdown("This server is shared by a committee: **sign in** to plan, compare and keep scenarios. "
                "What you save is recorded under your name.")
    for provider in providers(section):
        label = "Sign in" if provider is None else f"Sign in with {provider}"
        st.button(label, key=f"auth_login_{provider or ''}", type="primary", icon=":material/login:",
                  on_click=st.login, args=(provider,) if provider else ())


def sidebar(user: User) -> None:
    """Who is signed in, and Sign out (call in app.py, in the sidebar)."""
    with st.sidebar:
        if user.local:
            st.caption("Local mode: no sign-in; you are the operator of this app.")
            return
        st.markdown(f"Signed in as **{plain(user.name or user.email)}**"
                    + (f" ({plain(user.email)})" if user.name and user.email and user.name != user.email else "")
                    + f" · {user.role}")
        st.button("Sign out", key="auth_logout", icon=":material/logout:", on_click=st.logout)
