"""The daemon's HTTP API (spec 10): one module of routes per capability, and their document.

- ``memory`` — the sessionless memory task routes (submit and poll remember, forget, dream,
  capture) and ``/capabilities``; :func:`~oharness.daemon.routes.memory.state_of` is every
  route's handle on the daemon's state;
- ``notes`` — notes, search, one note with its links, backups and restores;
- ``sync`` — sync status, sync now, the switch and conflicts;
- ``recall`` — the per-message recall endpoint for other harnesses' hooks, on a fast path;
- ``workspaces`` — the hosted workspaces, the event stream and the page's sign-in;
- ``validation`` — checking task requests and JSON bodies, in the documented order;
- ``openapi`` — ``/openapi.json``: every operation's answers from one table; ``openapi_notes`` —
  the schemas of the notes routes' answers.

The Memory page's own routes are in :mod:`oharness.daemon.page`.
"""
