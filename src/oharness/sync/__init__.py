"""Sync: the wire protocol shared by client and server (spec 06), and the sync client (spec 07)."""
