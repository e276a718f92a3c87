"""Object storage for the sync server: one small interface, several backends (spec 08).

- :class:`~oharness.storage.object_store.ObjectStore` — get with ETag, conditional put, delete,
  list.
- ``file://PATH`` — :mod:`oharness.storage.file` (the embedded default).
- ``s3://BUCKET/PREFIX`` — :mod:`oharness.storage.s3` (boto3; R2, MinIO, SeaweedFS, AWS).
- ``memory://`` — :mod:`oharness.storage.in_memory` (in-process, for simulations and fast tests).
- :class:`~oharness.storage.counting.CountingObjectStore` — any store, its calls counted by kind.

:func:`oharness.storage.url.open_object_store` turns a URL into a store, and
:mod:`oharness.storage.validation` holds the key rules every backend shares.
"""
