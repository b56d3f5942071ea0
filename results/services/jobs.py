"""The work results' services queue after commit; results/apps.py binds the task that does it."""
from reviews.queue import Job

FINALIZE = Job("finalize a run")
