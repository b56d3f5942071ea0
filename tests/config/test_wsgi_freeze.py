"""What a gunicorn worker holds from its start is frozen out of the collector's full passes (config/wsgi.py)."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT

PROBE = """
import gc, sys
import config.wsgi
print(gc.get_freeze_count(), len(gc.get_objects()), "reconcile.views.page" in sys.modules)
"""


def test_serving_freezes_what_it_loaded_with_the_views_imported(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE",)}
    env |= {"DEBUG": "1", "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "VAR_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    frozen, tracked, views_loaded = done.stdout.split()
    # Everything alive at the end of start-up is frozen: what the collector still tracks is what came after.
    assert int(frozen) > 50_000 and int(tracked) < int(frozen) // 100, done.stdout
    assert views_loaded == "True"
