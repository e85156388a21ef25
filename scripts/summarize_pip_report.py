"""Summarise a ``pip install --report`` JSON file: key versions, whether torch is a CUDA build, every package.

Used by ``scripts/check_gpu_install.sh``::

    python scripts/summarize_pip_report.py report.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

KEY_PACKAGES = ("autorubric-local", "vllm", "torch", "transformers", "outlines", "outlines-core", "xgrammar")


def main(path: Path) -> None:
    report = json.loads(path.read_text(encoding="utf-8"))
    pins = {
        item["metadata"]["name"].lower().replace("_", "-"): item["metadata"]["version"] for item in report["install"]
    }
    print(f"# resolved: {len(pins)} packages")
    for name in KEY_PACKAGES:
        print(f"{name}=={pins.get(name, '(not in the set)')}")
    torch = next((i["metadata"] for i in report["install"] if i["metadata"]["name"].lower() == "torch"), None)
    if torch is None:
        print("# CUDA torch: NO (no torch in the set)")
    else:
        cuda = sorted({r.split(";")[0].split("=")[0].split(">")[0].split("<")[0].strip()
                       for r in torch.get("requires_dist", []) if r.lower().startswith(("nvidia-", "cuda-"))})
        build = "a CPU build" if "+cpu" in torch["version"] else f"needs {len(cuda)} CUDA packages: {', '.join(cuda)}"
        print(f"# CUDA torch: {'yes' if cuda and '+cpu' not in torch['version'] else 'NO'} (torch {torch['version']}, {build})")
    print("# every package:")
    for name, version in sorted(pins.items()):
        print(f"{name}=={version}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
