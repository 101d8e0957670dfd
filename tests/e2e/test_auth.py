"""Sign-in and roles in a real browser against a real OpenID Connect provider (issue 42).

A pytest fixture starts the npm package `oidc-provider` (tests/e2e/oidc/server.js; `npm ci`
in that folder installs it, as .ci/run does) on a free port of 127.0.0.1, and the app with
an ``[auth]`` section in a secrets.toml of its own (`--secrets.files`), on another free
port; Chromium (Debian's, through Playwright) signs in with Streamlit's real `st.login`:
nothing is mocked. Two accounts: ana@example.org, an operator, and bo@example.org, a member.

Skipped without node, the provider's node_modules or Chromium, unless
SAFETAB_REQUIRE_BROWSER=1 (CI), where that is a failure. Both servers are always stopped.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest

from tests.e2e.browser import ReusedPage, answers, chromium, free_port, require_browser, running, streamlit_server
from ui.committee import scenarios

pytestmark = pytest.mark.e2e

OIDC = Path(__file__).resolve().parent / "oidc"
CLIENT_ID, CLIENT_SECRET = "safetab-studio", "a-test-client-secret"
OPERATOR = ("ana@example.org", "ana-secret", "Ana Operator")
MEMBER = ("bo@example.org", "bo-secret", "Bo Member")


def _require_node() -> str:
    """node, with the provider installed; skipped without (a failure when SAFETAB_REQUIRE_BROWSER=1)."""
    node = shutil.which("node")
    missing = None
    if node is None:
        missing = "node is missing (the sign-in tests run an OpenID Connect provider on Node 20+)"
    elif not (OIDC / "node_modules" / "oidc-provider").is_dir():
        missing = "the test provider is not installed (cd tests/e2e/oidc && npm ci)"
    if missing:
        if os.environ.get("SAFETAB_REQUIRE_BROWSER") == "1":
            pytest.fail(f"SAFETAB_REQUIRE_BROWSER=1 but {missing}", pytrace=False)
        pytest.skip(missing)
    return node


@contextlib.contextmanager
def _provider(node: str, port: int, redirect: str, log: Path):
    """The test provider (tests/e2e/oidc/server.js) on `port`; stopped on exit, whatever happened."""
    env = {"PORT": str(port), "REDIRECT_URI": redirect, "CLIENT_ID": CLIENT_ID,
           "CLIENT_SECRET": CLIENT_SECRET}
    issuer = f"http://127.0.0.1:{port}"
    with running([node, "server.js"], cwd=OIDC, env=env, log=log, what="the OpenID Connect provider",
                 ready=lambda: answers(f"{issuer}/.well-known/openid-configuration"), startup_seconds=60, poll=0.2):
        yield issuer


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """The provider and the app with [auth], each on a free port; yields (app URL, the app's data folder)."""
    node = _require_node()
    require_browser()
    folder = tmp_path_factory.mktemp("auth")
    idp_port, app_port = free_port(), free_port()
    app = f"http://127.0.0.1:{app_port}"
    with _provider(node, idp_port, f"{app}/oauth2callback", folder / "provider.log") as issuer:
        secrets = folder / "secrets.toml"
        secrets.write_text(f"""[auth]
redirect_uri = "{app}/oauth2callback"
cookie_secret = "a-cookie-secret-for-the-tests-only"
client_id = "{CLIENT_ID}"
client_secret = "{CLIENT_SECRET}"
server_metadata_url = "{issuer}/.well-known/openid-configuration"

[auth.client_kwargs]
prompt = "login"

[studio]
operators = ["{OPERATOR[0].upper()}"]
""", encoding="utf-8")
        data = folder / "data"
        env = {"SAFETAB_STUDIO_DATA": str(data), "SAFETAB_STUDIO_OPERATORS": ""}
        with streamlit_server(folder / "streamlit.log", env=env, port=app_port,
                              args=("--secrets.files", str(secrets))) as url:
            assert url == app
            yield app, data


@pytest.fixture(scope="module")
def auth_browser(servers):
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def _window(auth_browser):
    """The module's page, lent to one test after another and emptied between them: its
    cookies cleared (the app's sign-in and the provider's), so no test finds another's
    session (`tests.e2e.browser.ReusedPage`)."""
    window = ReusedPage(auth_browser, 1400)
    yield window
    window.close()


@pytest.fixture
def page(_window):
    yield _window.take()
    _window.give_back()


def _sign_in_shown(page) -> None:
    """The page shows the sign-in and nothing of the app."""
    page.get_by_role("button", name="Sign in").wait_for()
    assert page.get_by_text("This server is shared by a committee").first.is_visible()
    for app_text in ("Budget and MOE planner", "Run the mechanism", "Save as scenario", "Undo"):
        assert page.get_by_text(app_text).count() == 0, app_text


def _provider_form(page, app: str) -> None:
    page.goto(app)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_label("E-mail").wait_for()
    assert page.url.startswith("http://127.0.0.1:") and "/interaction/" in page.url


def _sign_in(page, app: str, account) -> None:
    email, password, _name = account
    _provider_form(page, app)
    page.get_by_label("E-mail").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Continue").click()
    page.get_by_text("Signed in as").first.wait_for()


def _sidebar(page) -> str:
    return " ".join(page.locator('[data-testid="stSidebar"]').inner_text().replace("\u2060", "").split())


def test_a_page_address_opened_without_a_session_shows_only_the_sign_in(servers, page):
    app, _data = servers
    for address in ("", "/run", "/scenarios", "/budget?config=x"):
        page.goto(app + address)
        _sign_in_shown(page)


def test_a_wrong_password_is_refused(servers, page):
    app, _data = servers
    _provider_form(page, app)
    page.get_by_label("E-mail").fill(MEMBER[0])
    page.get_by_label("Password").fill("not-the-password")
    page.get_by_role("button", name="Continue").click()
    page.get_by_text("Wrong e-mail or password.").wait_for()
    page.goto(app + "/scenarios")
    _sign_in_shown(page)  # no session was made


def test_a_member_signs_in_is_refused_operator_actions_saves_as_themself_and_signs_out(servers, page):
    app, data = servers
    _sign_in(page, app, MEMBER)
    assert "Signed in as Bo Member (bo@example.org) · member" in _sidebar(page)
    page.goto(app + "/run")
    page.get_by_text("Uploaded SafeTab-P files").first.click()
    page.get_by_text("Only an operator may upload person or GRF-C files").first.wait_for()
    assert page.locator('[data-testid="stFileUploader"]').count() == 0
    page.goto(app + "/scenarios")
    box = page.get_by_role("textbox", name="Name", exact=True)
    box.fill("Bo's plan")
    box.press("Enter")
    page.get_by_text("Current plan:").first.wait_for()
    page.get_by_role("button", name="Save the current plan").click()
    page.get_by_text("Saved the current plan as scenario").first.wait_for()
    (version,) = scenarios.ScenarioStore(data / scenarios.DB_NAME).history("Bo's plan")
    assert (version.action, version.author) == ("create", MEMBER[0])  # recorded under their name
    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("button", name="Sign in").wait_for()
    page.goto(app + "/scenarios")
    _sign_in_shown(page)  # the session is gone


def test_an_operator_signs_in_and_may_upload(servers, page):
    app, _data = servers
    _sign_in(page, app, OPERATOR)
    assert "Signed in as Ana Operator (ana@example.org) · operator" in _sidebar(page)
    page.goto(app + "/run")
    page.get_by_text("Run the mechanism").first.wait_for()
    page.get_by_text("Uploaded SafeTab-P files").first.click()
    page.locator('[data-testid="stFileUploader"]').first.wait_for()
    assert page.get_by_text("Only an operator may").count() == 0
