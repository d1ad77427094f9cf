"""The flux-lite command: a click group whose subcommands load on demand.

Importing is most of a command's cost, so each command group lives in its own
module and is imported only when named on the command line.
"""

import sys

import click
import sqlite3

from flux_lite.cli import words
from flux_lite.cli.lazy import LazyGroup
from flux_lite.cli.words import prog

from flux_lite import bindings, kvs, notices
from flux_lite.errors import FluxLiteError, UsageError

# command name -> (module, attribute, short help)
COMMANDS = {
    "start": ("start", "start", "Create an instance (or run a command in a temporary one)"),
    "broker": ("start", "broker", "Run one broker (a one-node temporary instance) and a command in it"),
    "submit": ("submit", "submit", "Submit a job"),
    "run": ("submit", "run", "Submit a job and wait for it to end"),
    "batch": ("batch", "batch", "Submit a batch script (a job that is a Flux instance running it)"),
    "bulksubmit": ("batch", "bulksubmit", "Submit one job per set of inputs"),
    "alloc": ("batch", "alloc", "Interactive allocation: not in flux-lite (use batch)"),
    "jobs": ("jobs", "jobs", "List jobs"),
    "cancel": ("cancel", "cancel", "Cancel jobs"),
    "pgrep": ("pgrep", "pgrep", "List jobs by name pattern or id range"),
    "pkill": ("pgrep", "pkill", "Cancel jobs by name pattern or id range"),
    "job": ("job", "job",
            "Job utilities: id, submit, eventlog, info, wait-event, wait, last, purge, urgency, raise, ..."),
    "update": ("update", "update", "Update a job's jobspec (duration, ...)"),
    "job-exec-override": ("job_exec_override", "job_exec_override",
                          "Start or finish a test-exec job in override mode"),
    "resource": ("resource", "resource", "List, drain and undrain resources"),
    "R": ("R", "R", "Read, generate and combine RFC 20 resource sets (R)"),
    "housekeeping": ("housekeeping", "housekeeping", "List and kill housekeeping tasks"),
    "queue": ("queue", "queue", "List and control job queues: enable, disable, start, stop, drain, idle"),
    "ion-resource": ("ion_resource", "ion_resource",
                     "Fluxion's front end to sched-fluxion-resource: match, update, info, find, ..."),
    "sched": ("sched", "sched", "Reload and check the scheduler"),
    "module": ("module", "module", "Load, remove, reload and list modules (Flux spellings)"),
    "kvs": ("kvs", "kvs", "Inspect the KVS"),
    "config": ("config", "config", "Get or load the instance configuration"),
    "clock": ("clock", "clock", "Show or advance the instance clock"),
    "dmesg": ("dmesg", "dmesg", "Print the instance log"),
    "env": ("env", "env", "Print the exports that make `flux` reach the instance, or run a command with them"),
    "fsck": ("fsck", "fsck", "Check the state directory; repair what can be rebuilt"),
    "replay": ("replay", "replay", "Replay a workload trace (SWF) in simulated time"),
    "sweep": ("sweep", "sweep", "Replay a grid of policies, traces and configuration values, here or on Flux"),
    "dump": ("dump", "dump", "Dump the instance to a Flux KVS archive"),
    "restore": ("dump", "restore", "Create an instance from a Flux KVS archive"),
    "getattr": ("broker", "getattr_", "Print the value of a broker attribute"),
    "lsattr": ("broker", "lsattr", "List broker attributes"),
    "uptime": ("broker", "uptime", "Show how long this Flux instance has been running"),
    "overlay": ("broker", "overlay", "Show the overlay network's status (every broker is up)"),
    "logger": ("broker", "logger", "Log a message to the instance log"),
    "jobtap": ("broker", "jobtap", "Manage the job manager's jobtap plugins"),
    "python": ("python", "python", "Run Python with flux-lite's `flux` package (Flux's Python API)"),
    "version": ("version", "version", "Print the versions of the commands and library (as flux version)"),
}


class TopGroup(LazyGroup):
    """The flux-lite command: runs one command, then words its errors and
    notices as Flux's tools do."""

    def get_command(self, ctx, name):
        cmd = super().get_command(ctx, name)
        if cmd is None and words.is_flux(ctx):
            # Flux runs flux-NAME programs found on its exec path
            path = _external_command(name)
            if path is not None:
                return _external(name, path)
        return cmd

    def invoke(self, ctx):
        def waiting(msg):
            # said at once (not at the end, like other notices): the user is waiting now
            click.echo(f"flux-lite {ctx.invoked_subcommand}: {msg}", err=True)

        kvs.waiting_hook = waiting
        kvs.refused_write = False
        try:
            return self._invoke(ctx)
        except KeyboardInterrupt:
            # the transaction was rolled back on the way out
            _print_notices(ctx)
            click.echo(f"flux-lite {ctx.invoked_subcommand}: interrupted: nothing was changed "
                       "(the command's transaction was rolled back)", err=True)
            ctx.exit(130)
        finally:
            kvs.waiting_hook = None
            _print_notices(ctx)

    def _invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except UsageError as exc:
            _print_notices(ctx)
            cmd = ctx.invoked_subcommand
            if words.is_c_command(cmd):
                words.echo_error(str(exc), cmd, ctx)
                ctx.exit(1)
            click.echo(f"{words.prog(cmd, ctx)}: error: {exc}", err=True)
            ctx.exit(2)
        except FluxLiteError as exc:
            _print_notices(ctx)
            words.echo_error(str(exc), ctx.invoked_subcommand, ctx)
            ctx.exit(1)
        except sqlite3.DatabaseError as exc:
            kvs.refused_write = kvs.refused_write or "readonly" in str(exc)
            _print_notices(ctx)
            # a damaged or foreign state file: one line, not a traceback
            if "readonly" in str(exc):
                words.echo_error(str(kvs.ReadOnlyError()), ctx.invoked_subcommand, ctx)
            else:
                words.echo_error(f"state database: {exc}", ctx.invoked_subcommand, ctx)
            ctx.exit(1)
        except UnicodeError:
            # argv and environment arrive surrogate-escaped when not UTF-8
            _print_notices(ctx)
            words.echo_error("input is not valid UTF-8", ctx.invoked_subcommand, ctx)
            ctx.exit(1)
        except ValueError as exc:
            # a file name with a NUL byte reaches open(2) only as this
            if "null byte" not in str(exc):
                raise
            _print_notices(ctx)
            words.echo_error("a file name contains a NUL byte", ctx.invoked_subcommand, ctx)
            ctx.exit(1)
        except RecursionError:
            _print_notices(ctx)
            words.echo_error("input nested too deeply", ctx.invoked_subcommand, ctx)
            ctx.exit(1)
        except BrokenPipeError:
            # output piped into head(1) and the like: not an error worth a traceback
            sys.stderr.close()
            ctx.exit(1)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """click's main, with usage errors reported in Flux's words."""
        if complete_var is None:
            # one variable whatever the program name: as `flux` (flux-lite env's
            # PATH) the scripts' _FLUX_LITE_COMPLETE would otherwise run the command
            complete_var = "_FLUX_LITE_COMPLETE"
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as exc:
            report = words.usage_error(exc)
            if report is None:
                exc.show()
                sys.exit(exc.exit_code)
            click.echo("\n".join(report[0]), err=True)
            sys.exit(report[1])
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


def _external_command(name):
    """flux-NAME or flux-NAME.py in FLUX_EXEC_PATH_PREPEND, then FLUX_EXEC_PATH
    (as Flux's command driver looks them up), or None."""
    import os

    if not name or "/" in name:
        return None
    dirs = []
    for var in ("FLUX_EXEC_PATH_PREPEND", "FLUX_EXEC_PATH"):
        dirs += [d for d in os.environ.get(var, "").split(":") if d]
    for d in dirs:
        for candidate in (f"flux-{name}", f"flux-{name}.py"):
            path = os.path.join(d, candidate)
            if os.path.isfile(path) and (candidate.endswith(".py") or os.access(path, os.X_OK)):
                return path
    return None


def _external(name, path):
    """A command that runs the program at path: a .py script with flux-lite's
    Python and its `flux` package (as Flux runs them with its own), any
    other program as it is; flux-lite exits with its status."""

    @click.command(name=name, context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False,
                                                "help_option_names": []})
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    @click.pass_context
    def run(ctx, args):
        import os

        env = dict(os.environ, PYTHONPATH=bindings.pythonpath())
        state = (ctx.find_root().obj or {}).get("state_dir")
        if state:
            env["FLUX_LITE_STATE_DIR"] = os.path.abspath(state)
        argv = [sys.executable, path, *args] if path.endswith(".py") else [path, *args]
        sys.stdout.flush()
        try:
            os.execve(argv[0], argv, env)
        except OSError as exc:
            raise FluxLiteError(f"{path}: {exc.strerror}") from None

    run._flux_words = True  # its arguments are the program's own
    return run


def _print_notices(ctx):
    """Warnings the library raised for the user (a detected state rollback...).
    A command that could not save on a read-only state dir says only that."""
    msgs = notices.take_notices()
    if not msgs:
        return

    kvs = sys.modules.get("flux_lite.kvs")  # not imported: nothing was written, nor refused
    refused = kvs is not None and kvs.refused_write
    read_only = notices.READ_ONLY_NOTICE.partition("{}")[2]
    for msg in msgs:
        if refused and msg.endswith(read_only):
            continue
        click.echo(f"{prog(ctx.invoked_subcommand, ctx)}: warning: {msg}", err=True)


def _nonempty(ctx, param, value):
    # "" would otherwise fall back to the default instance without a word
    if value == "":
        raise click.BadParameter("must not be empty", ctx=ctx, param=param)
    return value


def _complete_directory(ctx, param, incomplete):
    from flux_lite.cli._complete import complete_directory

    return complete_directory(ctx, param, incomplete)


@click.group(cls=TopGroup, table=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--state-dir",
    metavar="DIR",
    envvar="FLUX_LITE_STATE_DIR",
    help="Instance state directory (default: $FLUX_LITE_STATE_DIR, else $XDG_STATE_HOME/flux-lite).",
    shell_complete=_complete_directory,
    callback=_nonempty,
)
@click.version_option(package_name="flux-lite", prog_name="flux-lite")
@click.pass_context
def cli(ctx, state_dir):
    """flux-lite: Flux's control plane on one machine, in simulated time."""
    ctx.obj = {"state_dir": state_dir}


def main(argv=None, prog_name=None):
    """Entry point; as `flux` (program name or prog_name) it speaks as Flux."""
    import os

    if prog_name is None:
        prog_name = "flux" if os.path.basename(sys.argv[0]) == "flux" else "flux-lite"

    if "_FLUX_LITE_COMPLETE" in os.environ:
        # KEY= without a trailing space, --opt=VALUE in bash; fish under click 8.4.0/8.4.1
        from flux_lite.cli._complete import register_completion_classes

        register_completion_classes()
    import gc

    # One command, then the process ends: the cyclic collector stays off.
    # Its scans of what a command keeps to the end (jobs read, rows built
    # for a listing) grow with the state and free next to nothing; what the
    # command built is then left to exit, not scanned by the interpreter's
    # final pass either. (A polling wait collects each poll's garbage.)
    gc.disable()
    try:
        cli.main(args=argv, prog_name=prog_name)
    finally:
        gc.freeze()


if __name__ == "__main__":
    main()
