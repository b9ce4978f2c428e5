"""``deonticbench report``: one self-contained HTML file for run folders.  Thin."""

from __future__ import annotations

from pathlib import Path

import click

from ._options import bootstrap_options, data_dir_option, reader_sensitivity_option


@click.command(name="report")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The HTML file to write [default: RUN/report.html for one run, "
    "./report.html for several].",
)
@bootstrap_options
@data_dir_option("the run's, else DEONTICBENCH_DATA; used to rebuild the prompts")
@reader_sensitivity_option
def command(
    run_dirs: tuple[Path, ...],
    out: Path | None,
    replicates: int,
    bootstrap_seed: int,
    data_dir: Path | None,
    reader_sensitivity: bool,
) -> None:
    """Write an HTML report of RUN_DIR(s): scores, figures, and every sample.

    Several runs are shown side by side, with paired differences against the first.  An
    eval set's folder stands for its runs, in the set's order: given alone, its report
    goes into the set folder, with each run's difference from the set's first run of the
    same protocol.
    """
    # start-up: ``deonticbench --help`` imports every command's module
    from ..api import score
    from ..report import REPORT_FILE, write_report
    from ..scoring.comparisons import compare
    from ..scoring.rows import require_scorable
    from ..scoring.set_table import set_comparisons
    from ..store import sets

    result = score(list(run_dirs), bootstrap=replicates, bootstrap_seed=bootstrap_seed)
    for note in result.notes:
        click.echo(note, err=True)
    scores = result.runs
    require_scorable(scores)
    if len(run_dirs) == 1 and sets.is_set_folder(run_dirs[0]):
        comparisons, shared = set_comparisons(scores, replicates, bootstrap_seed)
        for note in shared:
            click.echo(note, err=True)
    else:
        comparisons = [
            c for other in scores[1:] for c in compare(scores[0], other, replicates, bootstrap_seed)
        ]
    target = out or (run_dirs[0] / REPORT_FILE if len(run_dirs) == 1 else Path(REPORT_FILE))
    sensitivity = []
    if reader_sensitivity:
        # start-up: only --reader-sensitivity loads re-reading (and the sandbox)
        from ..scoring.rereading import labelled_sensitivity

        sensitivity = labelled_sensitivity(scores, bootstrap=replicates, seed=bootstrap_seed)
    written = write_report(scores, target, comparisons, data_dir=data_dir, sensitivity=sensitivity)
    size = written.stat().st_size
    click.echo(f"wrote {written} ({size / 1e6:.1f} MB); open it in any browser")
