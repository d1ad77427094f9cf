"""flux-lite job id / job namespace: job id conversions (no instance needed)."""

import sys

import click

from flux_lite.cli.params import c_jobid
from flux_lite.cli.words import is_flux
from flux_lite.errors import FluxLiteError
from flux_lite.formats import jobid


@click.command("id")
@click.option("-t", "--to", "to", default="dec", metavar="ENCODING",
              help="Output encoding: dec, hex, dothex, kvs, words, f58, f58plain, emoji (default dec).")
@click.argument("ids", nargs=-1)
def job_id(to, ids):
    """Convert job ids between encodings (reads stdin lines when no ID is given)."""
    if to.lower() not in jobid.ENCODINGS:
        if is_flux():
            raise FluxLiteError(f"Unknown to={to}")  # flux job id's words
        raise FluxLiteError(f"Unknown encoding '{to}' (expected one of {', '.join(jobid.ENCODINGS)})")
    if not ids:
        ids = [line for line in sys.stdin.read().splitlines()]
        if not ids:
            if is_flux():
                raise SystemExit(1)  # flux job id fails silently without input
            raise FluxLiteError("no job ids given")
    out = []
    for text in ids:
        try:
            value = jobid.decode(text.strip())
        except ValueError:
            raise FluxLiteError(f"{text.strip()}: malformed input") from None
        out.append(jobid.encode(value, to.lower()))
    click.echo("\n".join(out))


@click.command("namespace")
@click.argument("ids", nargs=-1, metavar="[JOBID...]")
def job_namespace(ids):
    """Print the guest namespace name of each job (job-<decimal id>); reads stdin lines when no ID is given."""
    # as flux job namespace: each line trimmed, each printed as it is read
    for text in ids or (line.strip() for line in sys.stdin):
        click.echo(f"job-{c_jobid(text)}")
