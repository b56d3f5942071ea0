"""`make run` ends with the login, not buried among install warnings and task logs (issue 22)."""
from pathlib import Path

from reviews.demo import DEMO_PASSWORD, login_banner

MAKEFILE = (Path(__file__).resolve().parents[2] / "Makefile").read_text()


def test_the_banner_names_the_url_the_user_the_password_the_token_command_and_how_to_stop():
    banner = login_banner("http://127.0.0.1:8000/")
    assert "http://127.0.0.1:8000/" in banner and "reviewer" in banner and DEMO_PASSWORD in banner
    assert "issue_token demo-agent --role agent" in banner and "Ctrl-C" in banner
    assert len(banner.splitlines()) <= 10


def test_install_and_demo_loading_write_their_noise_to_logs_shown_only_on_failure():
    assert "pip install --quiet -r requirements.txt >> var/install.log 2>&1 || (tail -40 var/install.log; exit 1)" \
        in MAKEFILE
    assert "manage.py load_demo > var/load_demo.log 2>&1 || (cat var/load_demo.log; exit 1)" in MAKEFILE
