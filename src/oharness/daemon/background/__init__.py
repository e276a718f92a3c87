"""What the daemon does on its own, off the request path: sync, consolidation, folder watching.

- ``sync`` — background sync: the one coordinator for every hosted folder, the sign-in and the
  off switch looked at every second; ``abortable`` — its HTTP client, whose requests in flight
  another thread can abort;
- ``following`` — every project this machine used is hosted, so background sync covers it;
- ``consolidation`` — background consolidation of each hosted workspace when a small model is
  set;
- ``folder_watch`` — one look at the hosted notes folders per tick, shared by every watcher;
  ``notices`` — which folders the OS says changed since their last walk;
- ``note_watch`` — notes changed on disk by another process, announced to the page;
- ``usage_writer`` — recall counts written many recalls to a write.
"""
