"""A dataset ``.json`` file (AutoRubric's object with ``items``) read a value at a time.

:func:`read_json_dataset` reads the file with
:func:`~autorubric_local.core.json_stream.stream_json`, so neither its text nor its whole parse
tree is held: each element of ``items`` is built into a
:class:`~autorubric_local.data.item.DataItem` (or the problem that stops it) as soon as it is
parsed, and only those items and the top-level members are kept. The items are checked against
the rubric once the whole file is read, since the object's members may come in any order (the
rubric after the items). A JSON *array* of submissions is instead kept as each item's place in
the file (:func:`~autorubric_local.data.submissions.load_grading_data`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, NamedTuple

from autorubric_local.core.errors import InputError
from autorubric_local.core.json_stream import JsonValue, stream_json
from autorubric_local.data.item import DataItem, _item_from_dict
from autorubric_local.data.validation import json_type_name

__all__ = ["JsonDataset", "read_json_dataset"]


class JsonDataset(NamedTuple):
    """What :func:`read_json_dataset` read.

    Attributes
    ----------
    top : str
        The JSON type of the top-level value: ``"object"`` for a dataset, else ``"array"``,
        ``"string"``, ...
    header : dict
        The members of a top-level object other than an ``items`` array, in file order (a key
        given twice keeps its first place and its last value, as ``json.loads`` does).
    items : list of (DataItem or InputError), or None
        Each element of the ``items`` array built with ``_item_from_dict`` (or its problem,
        without the item's name), at most ``limit`` of them; None without an ``items`` array.
    """

    top: str
    header: dict[str, Any]
    items: list[DataItem | InputError] | None


def read_json_dataset(
    path: str | os.PathLike[str],
    *,
    limit: int | None = None,
    events: Iterator[tuple[str, Any]] | None = None,
) -> JsonDataset:
    """Read the JSON file at ``path`` as a dataset object, one value at a time.

    Parameters
    ----------
    path : path
        The file.
    limit : int or None
        Build only the first ``limit`` items; later ones are parsed (the file is still checked
        whole) but neither built nor held.
    events : iterator or None
        The events of :func:`~autorubric_local.core.json_stream.stream_json` for ``path``, when
        the caller has already started reading them (its first event included).

    Raises
    ------
    InputError
        What :func:`~autorubric_local.core.json_stream.stream_json` raises: the file cannot be
        read, is not UTF-8, is not valid JSON, is nested too deep, or holds a value over 64 MiB.
    """
    events = events if events is not None else stream_json(path)
    header: dict[str, Any] = {}
    items: list[DataItem | InputError] | None = None
    top = "object"
    for kind, value in events:
        if kind == "scalar":
            top = json_type_name(value.value)
        elif kind == "array":
            top = "array"
        elif kind == "member":
            header[value.path[0]] = value.value
            if value.path[0] == "items":
                items = None  # a later "items" replaces an earlier array
        elif kind == "items":
            header.pop("items", None)
            items = []
        elif kind == "element" and items is not None and (limit is None or len(items) < limit):
            items.append(_built(value))
    return JsonDataset(top, header, items)


def _built(value: JsonValue) -> DataItem | InputError:
    try:
        return _item_from_dict(value.value)
    except InputError as e:
        return e
