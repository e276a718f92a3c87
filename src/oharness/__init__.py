"""oharness: a local-first memory engine for AI agent harnesses."""

__version__ = "0.1.0"
