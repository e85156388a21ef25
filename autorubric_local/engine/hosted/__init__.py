"""Hosted backend: a hosted API or an OpenAI-compatible server through LiteLLM.

Importing this package imports nothing heavy; the backend's library is imported when an
engine is built. Its registry record is :mod:`autorubric_local.judges.backends.hosted`."""
