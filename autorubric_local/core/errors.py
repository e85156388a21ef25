"""Exception hierarchy for autorubric-local.

Every error the library raises on purpose derives from :class:`AutorubricError`, so a caller
(the CLI in particular) can catch the library's own failures without a blanket ``except``.
Errors about user input also derive from :class:`ValueError`, matching AutoRubric, whose
loaders raise ``ValueError``.
"""

from __future__ import annotations


class AutorubricError(Exception):
    """Base class of every error raised on purpose by autorubric-local."""


class InputError(AutorubricError, ValueError):
    """Bad user input (rubric, dataset, configuration); the message names file, item and field."""


class MissingFileError(InputError, FileNotFoundError):
    """An input file does not exist. A ``FileNotFoundError``, as AutoRubric's loaders raise,
    and an :class:`InputError`, so callers catching the library's errors catch it too."""


class ModelNotFoundError(AutorubricError, FileNotFoundError):
    """A judge model could not be located; the message lists every place that was searched."""


class ModelIntegrityError(AutorubricError):
    """A judge model file's SHA-256 differs from the one its preset declares (a corrupt or
    substituted file); the message names the file and both digests."""


class EngineError(AutorubricError, RuntimeError):
    """A judge engine failed on a request (model error, context overflow, backend failure)."""


class NotStoredWarning(UserWarning):
    """An analysis of a database this process cannot write (a read-only file, folder or mount)
    was computed but not stored: the message names the database and what was not stored. The
    CLI prints it as one ``note:`` line."""


class RunLockedError(AutorubricError):
    """Another live process holds the run's lease (it is grading the run), or took it over from
    this one; the message names the run, the holder's pid and host and its last heartbeat."""


class SchemaVersionError(InputError):
    """A results database written by a newer version of autorubric-local (its schema has
    migrations this version does not know); it is refused rather than written to, and the
    message names both versions."""


class DatabaseWriteError(AutorubricError):
    """The results database could not be written (the disk or the database is full, the file
    became read-only, an I/O error): the message says what failed, that what was committed
    before is kept, and how to resume. Raised from the ``sqlite3.OperationalError`` it wraps."""
