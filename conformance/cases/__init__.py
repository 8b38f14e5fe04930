"""Conformance cases. Every public module here is imported by ``registry.load_cases``."""
