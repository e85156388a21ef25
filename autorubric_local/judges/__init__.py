"""Judge models: ``LLMConfig``, model presets and resolution, and loading an engine for a config.

- :mod:`.config`: ``LLMConfig``, the validated settings of one judge model;
- :mod:`.presets`: presets (package data in ``models/`` plus ``$AUTORUBRIC_LOCAL_MODELS``) and
  resolution of a model name to files on disk, Hugging Face cache included, never downloading;
- :mod:`.engines`: ``load_engine``, from a config to a ready engine (GGUF conversion, cache).
"""
