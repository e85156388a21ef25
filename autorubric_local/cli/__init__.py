"""``autorubric-local`` command line: one module per command, each a thin click wrapper over a
library call. Commands are registered on :func:`main` here."""

from __future__ import annotations

import click

# Modules are imported as modules (not their commands) so that ``autorubric_local.cli.grade``
# stays the module.
from autorubric_local.cli import (
    backends,
    backup,
    browse,
    calibrate,
    compare,
    estimate,
    export,
    grade,
    indeterminacy,
    label,
    metrics,
    models,
    report,
    runs,
    show,
)
from autorubric_local.cli import sweep as sweep_cli


@click.group()
@click.version_option(package_name="autorubric-local")
def main() -> None:
    """Grade text against weighted rubrics with local LLM judges.

    Example:

        autorubric-local grade examples/battery_rubric.yaml examples/battery_submissions.jsonl
    """


main.add_command(grade.grade)
main.add_command(models.models)
main.add_command(backends.backends)
main.add_command(sweep_cli.sweep)
main.add_command(sweep_cli.sweep_select)
main.add_command(compare.compare)
main.add_command(compare.ranking)
main.add_command(metrics.metrics)
main.add_command(calibrate.calibrate)
main.add_command(indeterminacy.indeterminacy)
main.add_command(runs.runs)
main.add_command(show.show)
main.add_command(export.export)
main.add_command(report.report)
main.add_command(estimate.estimate)
main.add_command(label.label)
main.add_command(browse.browse)
main.add_command(backup.backup)
