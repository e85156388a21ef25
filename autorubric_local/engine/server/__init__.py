"""Server judges: a llama.cpp or vLLM OpenAI-compatible server at an address the user names,
scored with exact multi-token label log-probabilities (:mod:`.backend`)."""
