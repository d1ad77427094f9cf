"""flux python: the Python flux-lite runs in, with its `flux` package importable."""

import sys

import click
from flux_lite.cli import launch
from flux_lite.cli.common import state_dir
from flux_lite.cli.words import prog


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False,
                                 "help_option_names": []})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def python(ctx, args):
    """Run Python with flux-lite's `flux` package first on PYTHONPATH (as `flux python`).

    `--get-path` prints the directory put on PYTHONPATH; `--list-versions`
    the interpreter's version command. The script's handle (`flux.Flux()`)
    reaches the selected instance. (The program's entry point, cli/launch.py,
    runs this before click loads; this command serves other ways in.)
    """
    sys.exit(launch.python(state_dir(ctx), list(args), prog=prog("python")))
