"""`make run` without a database configured serves the pages from SQLite: the run page, the member page and
the reconciliation page of a run with a validated report answer 200 there too (the run page's finding groups
are counted by PostgreSQL in production; records.finding_counts groups them in Python on SQLite)."""
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import SEEDS

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import json, os, sys
sys.path.insert(0, os.getcwd())
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth import get_user_model
from django.test import Client
from records.services import ingest_member_report
from reviews.audit import Actor
from reviews.services import create_run, issue_token
actor = Actor.command("test")
run = create_run(actor=actor, run_id="AAS-2026-01-05-sqlite-01", system="S", title="t", run_date="2026-01-05",
                 reviewed_boundary="0" * 40)
for role, path in json.loads(sys.argv[1]):
    ingest_member_report(run=run, role=role, filename=os.path.basename(path), content=open(path, "rb").read(),
                         actor=actor)
issue_token(name="sqlite-reviewer", role="reviewer", password="sqlite-pass-123", actor=actor)
client = Client()
client.force_login(get_user_model().objects.get(username="sqlite-reviewer"))
pages = [f"/runs/{run.run_id}/", f"/runs/{run.run_id}/members/memory/", f"/runs/{run.run_id}/reconcile/"]
print(json.dumps({page: client.get(page).status_code for page in pages}))
'''


def test_the_pages_answer_on_sqlite(tmp_path):
    seeds = [("workflow", str(sorted(SEEDS.glob("001*"))[0])), ("memory", str(sorted(SEEDS.glob("002*"))[0]))]
    env = {**os.environ, "DEBUG": "1", "DATABASE_URL": f"sqlite:///{tmp_path / 'pages.sqlite3'}", "REDIS_URL": "",
           "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(seeds)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    statuses = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(statuses.values()) == {200}, statuses
