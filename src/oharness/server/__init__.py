"""The sync server (spec 08): a stateless ASGI app speaking sync protocol 2 over object storage.

- :func:`oharness.server.app.create_app` — the app over an object store and settings;
- :func:`oharness.server.environment.create_app_from_env` — the same, configured from
  ``OHARNESS_SYNC_*`` variables (for ``oharness sync-server serve`` and ASGI servers);
- :class:`oharness.server.config.ServerSettings` — every setting, with the defaults of spec 08.

Modules: ``config`` (settings), ``auth`` (JWT verification, plans), ``planner`` (the pure commit
and snapshot logic), ``scope_service`` (snapshots and commits over the store),
``manifest_cache`` (what an instance remembers of manifests), ``erase`` (account and team
erasure, the erase gate), ``ratelimit``, ``responses`` (error bodies, capped body reading),
``logs`` (JSON logs, request ids), ``routes``, ``openapi`` (the OpenAPI document), ``context``
(the state the routes share), ``environment`` (settings from the environment), ``app``.
"""
