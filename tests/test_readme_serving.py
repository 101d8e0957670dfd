"""README.md's "Serving a committee" (issue 42, item 5) says what the code does: the command,
a secrets.toml the app reads as written, the store and its backups, local mode."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

from ui.committee import scenarios
from ui.core import auth

REPO = Path(__file__).resolve().parents[1]


def _section() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert "\n## Serving a committee\n" in text
    return text.split("\n## Serving a committee\n", 1)[1].split("\n## ", 1)[0]


def test_the_command_serves_the_shared_store():
    (cmd,) = [b.strip() for b in re.findall(r"```bash\n(.*?)```", _section(), flags=re.S)]
    assert cmd.startswith(f"{scenarios.ENV_DATA}=/srv/committee streamlit run app.py ")
    assert "--server.headless true" in cmd and "\n" not in cmd


def test_the_secrets_example_is_what_the_app_reads():
    (toml,) = re.findall(r"```toml\n(.*?)```", _section(), flags=re.S)
    secrets = tomllib.loads(toml)
    section = secrets["auth"]
    assert {"redirect_uri", "cookie_secret", "client_id", "client_secret", "server_metadata_url"} <= set(section)
    assert section["redirect_uri"].endswith("/oauth2callback")
    assert auth.providers(section) == [None]
    assert auth.operators(secrets, {}) == {"ana@example.org", "bo@example.org"}
    text = " ".join(_section().split())
    assert auth.ENV_OPERATORS in text and f"[{auth.SECRETS_SECTION}]" in toml
    assert ".streamlit/secrets.toml" in (REPO / ".gitignore").read_text().split()


def test_the_store_backups_and_local_mode_are_said(tmp_path):
    text = " ".join(_section().split())
    assert f"$SAFETAB_STUDIO_DATA/{scenarios.DB_NAME}" in text and "-wal" in text
    assert "Local mode." in text and f'recorded as by "{scenarios.LOCAL}"' in text
    assert "Deleted scenarios" in text and "only an operator purges it" in text
    # the backup one-liner works as written, on a store in WAL mode
    (line,) = re.findall(r'`(python3 -c "import sqlite3.*?)`', text)
    store = scenarios.ScenarioStore(tmp_path / scenarios.DB_NAME)
    from calculators.presets import production_2020

    store.save("kept", production_2020(), by="ana@example.org")
    code = re.search(r'-c "(.*?)"', line).group(1)
    backup = tmp_path / "backup.sqlite3"
    subprocess.run([sys.executable, "-c", code, str(store.path), str(backup)], check=True, timeout=60)
    with sqlite3.connect(backup) as con:
        assert con.execute("SELECT name FROM scenarios").fetchall() == [("kept",)]
    assert scenarios.ScenarioStore(backup).history("kept")[0].author == "ana@example.org"
