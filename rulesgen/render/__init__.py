"""Renderers: output models -> text (deterministic: fixed key order, sorted labels)."""
