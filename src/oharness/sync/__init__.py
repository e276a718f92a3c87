"""Sync: the wire protocol shared by client and server (spec 06), and the sync client (spec 07).

- ``protocol/`` — the wire messages, pure (see its own map);
- ``actions`` — what a person asks of sync (CLI, daemon, page), as calls returning values;
- ``sync_service`` — :class:`SyncService`: the checks before a pass (switch, sign-in,
  bindings) and the status after one;
- ``coordinator`` — when passes run in a long-lived process;
- ``daemon_lock`` — who runs background sync on this machine (the daemon's lock);
- ``scope_sync`` — one pass over one scope, in rounds; ``sync_round`` — a round's parts and
  state;
- ``plan`` — the pure reconciliation table; ``fetch``, ``apply``, ``commit`` — the stages of a
  round; ``upload`` — commits sized to fit; ``position`` — where the base stands;
- ``ancestor`` — the merge ancestor of each note (the sync base);
- ``conflicts``, ``resolve``, ``conflict_view`` — open conflicts, their resolutions, how a person
  compares them;
- ``batch`` — batch edits committed to the cloud first;
- ``local`` — which local note files can sync now;
- ``replicas`` — which sync state belongs to which notes folder (clones, moves, copies);
- ``settings_file`` — origin, token, switch and bindings on disk; ``client`` — the HTTP side;
- ``result`` — what a pass did; ``panel`` — the cloud sync panel's state;
- ``e2e`` — end-to-end encryption keys and sealing (not wired into sync yet).
"""
