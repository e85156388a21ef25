"""vLLM backend: an offline ``vllm.LLM`` as a judge engine, and the vLLM engine arguments we accept.

Importing this package imports nothing heavy; the backend's library is imported when an
engine is built. Its registry record is :mod:`autorubric_local.judges.backends.vllm`."""
