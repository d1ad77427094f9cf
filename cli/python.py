"""flux python: the Python flux-lite runs in, with its `flux` package importable."""

import os
import sys

import click
from flux_lite.cli.common import state_dir
from flux_lite.cli.words import prog

from flux_lite import bindings
from flux_lite.instance import resolve_state_dir


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False,
                                 "help_option_names": []})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def python(ctx, args):
    """Run Python with flux-lite's `flux` package first on PYTHONPATH (as `flux python`).

    `--get-path` prints the directory put on PYTHONPATH; `--list-versions`
    the interpreter's version command. The script's handle (`flux.Flux()`)
    reaches the selected instance.
    """
    if args and args[0] == "--get-path":
        click.echo(str(bindings.PATH))
        return
    if args and args[0] == "--list-versions":
        click.echo(f"python{sys.version_info.major}.{sys.version_info.minor}")
        return
    env = dict(os.environ, PYTHONPATH=bindings.pythonpath())
    chosen = state_dir(ctx)
    if chosen:
        env["FLUX_LITE_STATE_DIR"] = str(resolve_state_dir(chosen).absolute())
    sys.stdout.flush()
    try:
        os.execve(sys.executable, [sys.executable, *args], env)
    except OSError as exc:
        click.echo(f"{prog('python')}: execvp ({sys.executable}): {exc.strerror}", err=True)
        sys.exit(1)
