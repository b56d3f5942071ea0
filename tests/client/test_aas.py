"""The `aas` client against a live server and a real worker (DESIGN §13): exit codes, --json, the full loop."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, SHARED

EXAMPLE = SHARED / "examples" / "links-form"
RUN_ID = "AAS-2026-12-01-tinycache-0123456789ab-01"


@pytest.fixture
def aas(tmp_path):
    """Run the client from its source tree as an agent would run the installed command."""
    env = dict(os.environ, AAS_CONFIG=str(tmp_path / "aas.json"), PYTHONPATH=str(ROOT / "client"))
    env.pop("AAS_URL", None), env.pop("AAS_TOKEN", None)

    def run(*args, timeout=120):
        done = subprocess.run([sys.executable, "-m", "aas_client.cli", *args], capture_output=True, text=True,
                              check=False, env=env, timeout=timeout, cwd=tmp_path)
        return done.returncode, done.stdout, done.stderr

    return run


def test_it_answers_usage_errors_with_exit_2_and_an_unreachable_server_with_3(aas):
    assert aas("frobnicate")[0] == 2
    assert aas("status", RUN_ID)[0] == 2  # not logged in
    code, _out, err = aas("login", "http://127.0.0.1:9/", "nokey")
    assert code == 3 and "did not answer" in err and "Traceback" not in err


@pytest.mark.django_db(transaction=True)
def test_it_runs_the_agents_loop_push_wait_corrections_answer_wait(aas, live_server, worker, agent, reviewer,
                                                                    tmp_path):
    code, out, err = aas("login", live_server.url, agent.token_key)
    assert code == 0, err
    assert "agent-1" in out
    run_dir = tmp_path / RUN_ID
    shutil.copytree(EXAMPLE / RUN_ID, run_dir)

    code, out, err = aas("--json", "push", str(run_dir))
    assert code == 0, err
    pushed = json.loads(out)
    assert pushed["run_id"] == RUN_ID
    assert "[6/6]" in err  # progress per member
    assert {m["sha256"] for m in pushed["members"]} == {
        hashlib.sha256((run_dir / name).read_bytes()).hexdigest() for name in os.listdir(run_dir)
        if name.endswith(".md")}

    code, out, err = aas("wait", RUN_ID, "--until", "in_review", "--timeout", "90")
    assert code == 0, err
    assert aas("status", RUN_ID)[1].startswith(f"{RUN_ID}  in_review")
    assert aas("findings", RUN_ID)[0] == 0

    code, out, err = aas("--json", "corrections", RUN_ID, "--mine")
    assert code == 0, err
    open_requests = [c for c in json.loads(out) if c["state"] == "open"]
    assert [c["member"] for c in open_requests] == ["runtime"]

    code, out, err = aas("answer", RUN_ID, "runtime", str(run_dir / "nope.md"))
    assert code == 2
    wrong = tmp_path / "wrong-answers.md"
    wrong.write_text("- corrected: one\n- corrected: two\n")
    code, out, err = aas("answer", RUN_ID, "runtime", str(EXAMPLE / "round-2" / "runtime.md"), "--answers", str(wrong))
    assert code == 1 and "Traceback" not in err and "answer" in err.lower()

    code, out, err = aas("answer", RUN_ID, "runtime", str(EXAMPLE / "round-2" / "runtime.md"),
                         "--answers", str(EXAMPLE / "round-2" / "runtime-answers.md"))
    assert code == 0, err
    assert " v2 " in out
    code, out, err = aas("wait", RUN_ID, "--until", "in_review", "--timeout", "90")
    assert code == 0, err
    assert json.loads(aas("--json", "corrections", RUN_ID, "--mine")[1]) == []  # nothing left to answer
    answered = json.loads(aas("--json", "corrections", RUN_ID)[1])
    assert [(c["member"], c["answered_in_version"]) for c in answered] == [("runtime", 2)]

    code, out, err = aas("status", "AAS-2026-01-01-nothing-01")
    assert code == 1 and "Traceback" not in err and "404" in err
    code, out, err = aas("wait", RUN_ID, "--until", "final", "--timeout", "1")
    assert code == 1 and "did not reach final" in err
