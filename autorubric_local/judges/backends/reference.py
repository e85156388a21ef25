"""The backend support matrix of docs/backends.md, written by cog from the registry's own records.

Each built-in backend's :attr:`~.record.Backend.unsupported` mapping is what
:func:`~.support.check_backend_support` refuses at load, so the page and the refusals cannot
disagree; ``tests/test_docs_reference.py`` fails while the committed page is stale. Plugins are
left out: the page documents this package, not what one machine has installed.
"""

from __future__ import annotations

from autorubric_local.judges.backends import registry
from autorubric_local.judges.config import LLMConfig


def support_matrix() -> str:
    """Markdown: one row per ``LLMConfig`` field some built-in backend refuses, one column per backend.

    A cell is ``yes`` where the backend honours the field and ``no`` where a non-default value is
    refused when the judge loads; the reasons follow the table, as the refusal states them.
    """
    backends = [b for name, b in registry.registered().items() if registry.origin(name) == "built-in"]
    refused = {field for b in backends for field in b.unsupported}
    fields = [name for name in LLMConfig.model_fields if name in refused]
    lines = [
        "| `LLMConfig` field | " + " | ".join(f"`{b.name}`" for b in backends) + " |",
        "| --- | " + " | ".join(":---:" for _ in backends) + " |",
    ]
    for field in fields:
        lines.append(f"| `{field}` | " + " | ".join("no" if field in b.unsupported else "yes" for b in backends) + " |")
    lines.append("")
    lines.append("Why each is refused:")
    lines.append("")
    for b in backends:
        for field in fields:
            if field in b.unsupported:
                lines.append(f"- `{b.name}`, `{field}`: {b.unsupported[field]}")
    return "\n".join(lines) + "\n"
