"""Judge backends: one :class:`Backend` record each, registered in one place (:mod:`.registry`).

A new backend is its engine (the :class:`~autorubric_local.engine.base.Engine` protocol) and
one record, registered once: in-process with :func:`register`, or from another package through
the ``autorubric_local.backends`` entry point group.
"""

from autorubric_local.judges.backends.record import CAPABILITIES, Backend
from autorubric_local.judges.backends.registry import (
    ENTRY_POINT_GROUP,
    backend_named,
    backend_names,
    register,
    registered,
    unregister,
)

__all__ = ["CAPABILITIES", "ENTRY_POINT_GROUP", "Backend", "backend_named", "backend_names", "register",
           "registered", "unregister"]
