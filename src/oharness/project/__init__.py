"""Projects and machine-local places (spec 00, 01.3–01.8).

- ``discovery`` — which project a folder belongs to: the one rule every interface follows;
- ``identity`` — finding and registering projects;
- ``paths`` — where machine-local state lives under ``$OHARNESS_HOME``;
- ``config`` — the user and project config files read into settings;
- ``used`` — the projects this machine has used (the daemon syncs every one).
"""
