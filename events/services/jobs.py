"""The work events' services queue after commit (reviews/queue.py); bound to tasks in EventsConfig.ready."""
from reviews.queue import Job

FAN_OUT = Job("events.fan_out")  # read the trail past the fan-out mark, make the deliveries it owes
DELIVER = Job("events.deliver")  # one attempt of one delivery (args: delivery pk)
