"""flux-lite job-exec-override: start or finish a job of the test execution
mode that waits for it (attributes.system.exec.test.override)."""

import click
from flux_lite.cli.common import session
from flux_lite.cli.params import JOBID

from flux_lite import admin


@click.group("job-exec-override")
def job_exec_override():
    """Start or finish a test-exec job in override mode (exec.test.override)."""


@job_exec_override.command("start")
@click.argument("jobid", type=JOBID)
def start(jobid):
    """Start JOBID: it posts start, then runs its run_duration."""
    with session() as broker:
        admin.job_exec_override(broker, jobid, "start")


@job_exec_override.command("finish")
@click.argument("jobid", type=JOBID)
@click.argument("status", type=int, default=0)
def finish(jobid, status):
    """Finish JOBID with wait status STATUS (default 0)."""
    with session() as broker:
        admin.job_exec_override(broker, jobid, "finish", status)
