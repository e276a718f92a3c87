"""Notes: the file format, content hash, ids, the store, links, backups and secret detection."""
