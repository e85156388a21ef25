"""llama.cpp backend: GGUF files run as stored through llama-cpp-python.

Importing this package imports nothing heavy; the backend's library is imported when an
engine is built. Its registry record is :mod:`autorubric_local.judges.backends.llamacpp`."""
