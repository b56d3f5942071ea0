"""The work records' services queue after commit; records/apps.py binds records' tasks, and an app
above records binds what it does once a run is validated (reconcile syncs its decisions)."""
from reviews.queue import Job

PARSE = Job("parse a member version")
VALIDATE = Job("validate a run")
RUN_VALIDATED = Job("after a run's validation")
