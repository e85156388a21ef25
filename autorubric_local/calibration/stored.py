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
    row id."""
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

    Raises
    ------
    InputError
        An unknown method, or none is stored.
    """
    chosen = None if method is None else as_method(method).value
    rows = store.threshold_calibrations(run_id, chosen)
    if not rows:
        what = "no calibration" if chosen is None else f"no {chosen} calibration"
        raise InputError(f"run {run_id}: {what} stored (fit one with 'autorubric-local calibrate')")
    return ThresholdCalibration.model_validate_json(rows[0]["calibration_json"])
