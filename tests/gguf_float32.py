"""A float32 re-encoding of a GGUF file, for comparing llama.cpp with transformers on equal weights.

Used by ``tests/test_llamacpp_backend.py`` and ``scripts/bench_llamacpp.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def dequantised_gguf(source: Path, target: Path) -> Path:
    """Write ``source`` again with every tensor de-quantised to float32 (metadata unchanged).

    The values are those the transformers backend computes with (it de-quantises the same file
    with the same ``gguf`` routines), so llama.cpp on this copy differs from transformers only in
    float32 summation order: it isolates the backend from the quantised kernels' arithmetic.
    Returns ``target``; an existing ``target`` is reused (the file is written under a temporary
    name and renamed, so an interrupted write never leaves a partial ``target``). About 4 bytes
    per parameter: 0.5 GiB for SmolLM2-135M, 1.1 GiB for Gemma 3 270M.
    """
    import gguf

    if target.exists():
        return target
    reader = gguf.GGUFReader(source)
    architecture = str(reader.fields[gguf.Keys.General.ARCHITECTURE].contents())
    partial = target.with_name(target.name + ".partial")
    writer = gguf.GGUFWriter(str(partial), architecture)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        value = field.contents()
        if field.name == gguf.Keys.General.FILE_TYPE:
            value = int(gguf.LlamaFileType.ALL_F32)
        kind = field.types[0]
        writer.add_key_value(field.name, value, kind,
                             sub_type=field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None)
    for tensor in reader.tensors:
        values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        writer.add_tensor(tensor.name, np.ascontiguousarray(values.reshape(tuple(reversed(tensor.shape.tolist())))),
                          raw_dtype=gguf.GGMLQuantizationType.F32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    partial.replace(target)
    return target
