"""The daemon's sessionless memory tasks (spec 10.1): queued, run one at a time per workspace.

- ``lane`` — a task, its snapshot and outcome, and :class:`~oharness.daemon.tasks.lane.TaskLane`:
  one serial lane per workspace, its limits, timeouts and cancellation;
- ``memory_tasks`` — what remember, forget and dream do without a model, over a workspace's
  memory service, and the dreamer and capturer a host installs;
- ``agent`` — the hidden agent behind remember and forget when a small model is configured;
- ``dream`` — the dream task: review's same-topic merges with concatenated drafts.
"""
