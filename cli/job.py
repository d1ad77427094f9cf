"""flux-lite job: the group of per-job utilities (as flux job).

Its subcommands live in three modules, imported only when one of theirs is
named (the command table: `job id` costs what converting an id costs).
"""

import click

from flux_lite.cli.lazy import LazyGroup

# subcommand -> (module under flux_lite.cli, attribute, short help)
COMMANDS = {
    "id": ("job_id", "job_id", "Convert job ids between encodings"),
    "namespace": ("job_id", "job_namespace", "Print the guest namespace name of a job"),
    "submit": ("job_utils", "job_submit", "Submit a jobspec (YAML or JSON) from FILE or stdin"),
    "eventlog": ("job_utils", "job_eventlog", "Print a job's eventlog"),
    "info": ("job_utils", "job_info", "Print job KEYS: jobspec, R, eventlog, J"),
    "wait-event": ("job_utils", "job_wait_event", "Wait for an event in a job's eventlog"),
    "urgency": ("job_utils", "job_urgency", "Set a pending job's urgency"),
    "memo": ("job_utils", "job_memo", "Post an RFC 21 memo to a job"),
    "raise": ("job_utils", "job_raise", "Raise an exception on a job"),
    "cancel": ("job_utils", "job_cancel", "Cancel one job"),
    "attach": ("job_attach", "job_attach", "Wait for a job to end; print its output and exit with its exit code"),
    "raiseall": ("job_kill", "job_raiseall", "Raise an exception on multiple jobs"),
    "kill": ("job_kill", "job_kill", "Send a signal to running jobs"),
    "killall": ("job_kill", "job_killall", "Send a signal to all running jobs of a user"),
    "taskmap": ("job_taskmap", "job_taskmap", "Print, query or convert a job's task map (RFC 34)"),
    "timeleft": ("job_utils", "job_timeleft", "Print the seconds left before a running job's expiration"),
    "list": ("job_list", "job_list_cmd", "List jobs as job-list's JSON records (for scripts)"),
    "list-inactive": ("job_list", "job_list_inactive", "List inactive jobs as job-list's JSON records"),
    "list-ids": ("job_list", "job_list_ids", "Print job-list's JSON record of each job id"),
    "last": ("jobctl", "job_last", "List my most recently submitted job id(s)"),
    "wait": ("jobctl", "job_wait", "Wait for a waitable job to end"),
    "purge": ("jobctl", "job_purge", "Purge inactive jobs"),
    "stats": ("jobctl", "job_stats", "Print job statistics as JSON"),
    "status": ("jobctl", "job_status", "Wait for jobs to end; exit with the largest exit code"),
}


@click.group(cls=LazyGroup, table=COMMANDS)
def job():
    """Job utilities (as flux job)."""
