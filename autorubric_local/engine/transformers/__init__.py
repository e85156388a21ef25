"""Transformers backend: the engine, its attention paths, packed tries and batched passes.

Importing this package imports nothing heavy; the backend's library is imported when an
engine is built. Its registry record is :mod:`autorubric_local.judges.backends.transformers`."""
