"""Builders: pure functions from Catalog + Settings to output models (no I/O)."""
