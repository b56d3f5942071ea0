"""deploy/ holds systemd units for the web server, the worker and beat, each restarted by systemd (DESIGN §10)."""
from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

UNITS = ["aas-web.service", "aas-worker.service", "aas-beat.service"]


def service(name: str) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read(ROOT / "deploy" / name)
    return parser["Service"]


def test_every_process_is_supervised_and_the_web_server_listens_on_loopback_only():
    for name in UNITS:
        assert service(name)["Restart"] == "always", name
        assert service(name)["EnvironmentFile"] == "/etc/aas/aas.env", name
    web = service("aas-web.service")["ExecStart"]
    assert "--worker-class gevent" in web and "--bind 127.0.0.1:" in web
    for name in ("aas-worker.service", "aas-beat.service"):  # one connection each: the README's arithmetic
        assert service(name)["Environment"] == "DB_POOL_MAX_SIZE=0", name


def test_the_units_pass_systemd_analyze_verify(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (no systemd on this machine)")
    # The units name the installed paths (/srv/aas, its .venv, /etc/aas/aas.env); verify checks that each
    # command exists, so it reads copies that point at this checkout and its interpreter's bin/.
    (tmp_path / "aas.env").write_text("DEBUG=0\n")
    for name in UNITS:
        text = (ROOT / "deploy" / name).read_text()
        text = text.replace("/srv/aas/.venv/bin", str(Path(sys.executable).parent)).replace("/srv/aas", str(ROOT))
        (tmp_path / name).write_text(text.replace("/etc/aas/aas.env", str(tmp_path / "aas.env")))
    done = subprocess.run(["systemd-analyze", "verify", *(str(tmp_path / name) for name in UNITS)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr.strip() == "", done.stderr
