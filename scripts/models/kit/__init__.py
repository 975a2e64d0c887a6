"""Fixture and reference-output builder for hugot-stream (a build tool, never a runtime dependency)."""
