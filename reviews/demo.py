"""The demo's people, as `load_demo` creates them and `serve_demo`'s banner names them."""
from __future__ import annotations

DEMO_REVIEWER = "reviewer"
DEMO_PASSWORD = "reviewer-demo-pass"
DEMO_AGENT = "demo-agent"


def login_banner(url: str) -> str:
    """The few lines `make run` ends with: where to log in, as whom, a token for an agent, how to stop."""
    lines = [
        f"  Open      {url}",
        f"  User      {DEMO_REVIEWER}",
        f"  Password  {DEMO_PASSWORD}",
        f"  Agent     .venv/bin/python manage.py issue_token {DEMO_AGENT} --role agent   (prints a token)",
        "  Stop      Ctrl-C",
    ]
    rule = "=" * 72
    return "\n".join(["", rule, "  The review app is running.", *lines, rule, ""])
