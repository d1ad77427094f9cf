"""flux-lite version: the versions `flux version` prints, for scripts that read them."""

import click


@click.command()
def version():
    """Print the version of the commands and library, as flux version does.

    flux-lite is both: the two lines name its own version, and build-options
    names flux-lite (scripts that parse Flux's version find a non-Flux build).
    """
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version

    try:
        number = package_version("flux-lite")
    except PackageNotFoundError:  # run from a checkout that was never installed
        number = "unknown"
    click.echo(f"commands:    \t\t{number}")
    click.echo(f"libflux-core:\t\t{number}")
    click.echo("build-options:\t\t+flux-lite")
