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

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.test_browser import CHROMIUM, LAUNCH_ARGS, _free_port, _require_browser
from ui.committee import scenarios

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
OIDC = Path(__file__).resolve().parent / "oidc"
CLIENT_ID, CLIENT_SECRET = "safetab-studio", "a-test-client-secret"
OPERATOR = ("ana@example.org", "ana-secret", "Ana Operator")
MEMBER = ("bo@example.org", "bo-secret", "Bo Member")


def _require_node() -> str:
    node = shutil.which("node")
    missing = None
    if node is None:
        missing = "node is missing (the sign-in tests run an OpenID Connect provider on Node 20+)"
    elif not (OIDC / "node_modules" / "oidc-provider").is_dir():
        missing = f"the test provider is not installed (cd {OIDC.relative_to(REPO)} && npm ci)"
    if missing:
        if os.environ.get("SAFETAB_REQUIRE_BROWSER") == "1":
            pytest.fail(f"SAFETAB_REQUIRE_BROWSER=1 but {missing}", pytrace=False)
        pytest.skip(missing)
    return node


def _wait(url: str, proc: subprocess.Popen, log: Path, what: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{what} did not start:\n{log.read_text()[-3000:]}", pytrace=False)
        time.sleep(0.2)


def _stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """The provider and the app, each on a free port; yields (app URL, the app's data folder)."""
    node = _require_node()
    _require_browser()
    folder = tmp_path_factory.mktemp("auth")
    idp_port, app_port = _free_port(), _free_port()
    app = f"http://127.0.0.1:{app_port}"
    issuer = f"http://127.0.0.1:{idp_port}"
    env = dict(os.environ, PORT=str(idp_port), REDIRECT_URI=f"{app}/oauth2callback", CLIENT_ID=CLIENT_ID,
               CLIENT_SECRET=CLIENT_SECRET)
    idp_log = folder / "provider.log"
    with open(idp_log, "wb") as fh:
        idp = subprocess.Popen([node, "server.js"], cwd=OIDC, env=env, stdout=fh, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        _wait(f"{issuer}/.well-known/openid-configuration", idp, idp_log, "the OpenID Connect provider")
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
        app_env = dict(os.environ, SAFETAB_STUDIO_DATA=str(data))
        app_env.pop("SAFETAB_STUDIO_OPERATORS", None)
        app_log = folder / "streamlit.log"
        cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
               "--server.port", str(app_port), "--server.address", "127.0.0.1",
               "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
               "--secrets.files", str(secrets)]
        with open(app_log, "wb") as fh:
            proc = subprocess.Popen(cmd, cwd=REPO, env=app_env, stdout=fh, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        try:
            _wait(f"{app}/_stcore/health", proc, app_log, "streamlit")
            yield app, data
        finally:
            _stop(proc)
    finally:
        _stop(idp)


@pytest.fixture(scope="module")
def browser(servers):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    try:
        yield pg
    finally:
        context.close()


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
