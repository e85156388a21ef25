"""Calibrations in the run's database: save a fit with its run, load the latest one back.

Rows live in ``threshold_calibrations`` (:mod:`autorubric_local.store.calibrations`), written
through :class:`~autorubric_local.store.Store`; this module turns :class:`.fit.CalibrationRun`
into a row and a row back into :class:`.fit.ThresholdCalibration`.
"""

from __future__ import annotations

from autorubric_local.calibration.fit import CalibrationRun, ThresholdCalibration
from autorubric_local.calibration.rules import Method, as_method
from autorubric_local.core.errors import InputError
from autorubric_local.store import Store

__all__ = ["load_calibration", "save_calibration"]


def save_calibration(store: Store, run_id: str, fitted: CalibrationRun) -> int:
    """Store ``fitted`` (rules, split, settings, held-out report) with run ``run_id``; return the
    row id.

    One transaction adds one ``threshold_calibrations`` row (docs/database.md): the method,
    ``fitted.settings`` as sorted-key JSON, the training and test item ids as JSON arrays, the
    rules (``fitted.calibration``) and the held-out report (``fitted.held_out``) as their
    pydantic JSON, and the time of storing (``fitted_utc``, ISO 8601 UTC). Earlier fits of the
    run are kept; :func:`load_calibration` reads the newest. The stored run's verdicts are not
    changed (:func:`~autorubric_local.calibration.apply.apply_calibration` applies a fit to a
    copy).

    Parameters
    ----------
    store : Store
        Open on a writable, migrated results database (:meth:`Store.open
        <autorubric_local.store.Store.open>`).
    run_id : str
        The run's id (``runs.id``, ``EvalResult.run_id``), not its name; not checked against
        the ``runs`` table.
    fitted : CalibrationRun
        From :func:`~autorubric_local.calibration.fit.calibrate_run`.

    Returns
    -------
    int
        The new row's ``threshold_calibrations.id``, increasing with each call on a database.

    Raises
    ------
    TypeError
        ``fitted.settings`` holds a value :func:`json.dumps` cannot encode (``calibrate_run``'s
        never do).
    sqlite3.OperationalError
        ``database is locked`` (another writer held the lock past the busy timeout,
        :func:`~autorubric_local.store.transaction.write_transaction`), or a read-only
        database.
    """
    return store.save_threshold_calibration(
        run_id,
        method=fitted.calibration.method.value,
        settings=fitted.settings,
        train_item_ids=fitted.train_ids,
        test_item_ids=fitted.test_ids,
        calibration_json=fitted.calibration.model_dump_json(),
        held_out_json=fitted.held_out.model_dump_json(),
    )


def load_calibration(store: Store, run_id: str, method: Method | str | None = None) -> ThresholdCalibration:
    """The latest calibration stored with ``run_id`` (of ``method`` when given).

    "Latest" is the row with the highest id (the last :func:`save_calibration`). Only the
    rules are returned; the stored held-out report and split stay in the row.

    Parameters
    ----------
    store : Store
        Open on a results database (read-only is enough).
    run_id : str
        The run's id (``runs.id``), not its name.
    method : Method or {"threshold", "platt", "isotonic"}, optional
        Only calibrations fitted with this method; default: any method.

    Returns
    -------
    ThresholdCalibration
        The fitted rules, ready for
        :func:`~autorubric_local.calibration.apply.apply_calibration`.

    Raises
    ------
    InputError
        An unknown method (:func:`~autorubric_local.calibration.rules.as_method`; the message
        lists the methods), or no calibration (of that method) is stored for ``run_id``,
        including an unknown run id.
    pydantic.ValidationError
        The stored ``calibration_json`` no longer validates as a :class:`ThresholdCalibration`.
    """
    chosen = None if method is None else as_method(method).value
    rows = store.threshold_calibrations(run_id, chosen)
    if not rows:
        what = "no calibration" if chosen is None else f"no {chosen} calibration"
        raise InputError(f"run {run_id}: {what} stored (fit one with 'autorubric-local calibrate')")
    return ThresholdCalibration.model_validate_json(rows[0]["calibration_json"])
