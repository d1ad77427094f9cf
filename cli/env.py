"""flux-lite env: the environment that makes `flux` reach an instance (as flux env)."""

import os
import sys

import click
from flux_lite.cli.common import state_dir
from flux_lite.cli.words import flux_environment, prog

from flux_lite.instance import Instance, resolve_state_dir


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def env(ctx, command):
    """Print shell exports that put the instance's `flux` first on PATH, or run COMMAND with them.

    `eval "$(flux-lite env)"` in a shell, then Flux scripts and commands
    typed as `flux ...` run against this instance, unchanged.
    """
    path = resolve_state_dir(state_dir(ctx)).absolute()
    Instance.open(path).close()  # one clear error when there is no instance
    variables = flux_environment(path)
    if not command:
        for name, value in variables.items():
            click.echo(f'export {name}="{_quote(value)}"')
        return
    import subprocess

    try:
        rc = subprocess.call(list(command), env=dict(os.environ, **variables))
    except OSError as exc:
        click.echo(f"{prog()}: execvp ({command[0]}): {exc.strerror}", err=True)
        sys.exit(1)
    sys.exit(rc if rc >= 0 else 128 - rc)


def _quote(value):
    """Escape what a double-quoted shell word would expand."""
    for char in ("\\", '"', "$", "`"):
        value = value.replace(char, "\\" + char)
    return value
