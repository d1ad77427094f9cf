"""flux-lite dump / flux-lite restore: the instance to and from a Flux KVS archive."""

import sys

import click
from flux_lite.cli.common import read_session, state_dir
from flux_lite.cli.words import prog

from flux_lite import archive
from flux_lite import config as configmod
from flux_lite import restore as restoremod
from flux_lite.dump import batched_entries
from flux_lite.instance import resolve_state_dir


class _Progress:
    """The CR-prefixed progress line Flux's dump and restore print on stderr:
    every key up to 9, then every 100th, then the total with a newline."""

    def __init__(self, prog, quiet, verbose):
        self.prog = prog
        self.quiet = quiet
        self.verbose = verbose
        self.open = False
        self.hundreds = 0  # count // 100 when the line was last shown

    def due(self, count):
        """Is the line shown at this count? (Asked first: a dump of a million
        jobs passes here five million times. The count may also jump by a
        batch of keys: the line is shown once it has passed a hundred.)"""
        return (count < 10 or count // 100 != self.hundreds) and not (self.quiet or self.verbose)

    def show(self, text, count):
        if self.due(count):
            sys.stderr.write(f"\r{self.prog}: {text}")
            sys.stderr.flush()
            self.open = True
            self.hundreds = count // 100

    def end(self, text):
        if not self.quiet and not self.verbose:
            sys.stderr.write(f"\r{self.prog}: {text}\n")
            sys.stderr.flush()
        self.open = False

    def abort(self):
        """An error follows: it gets a line of its own."""
        if self.open:
            sys.stderr.write("\n")
            self.open = False


@click.command()
@click.option("-v", "--verbose", is_flag=True, help="List keys on stderr as they are archived.")
@click.option("-q", "--quiet", is_flag=True, help="Don't show periodic progress updates.")
@click.option("--checkpoint", is_flag=True,
              help="Write a shutdown dump: with checkpoint/job-manager and checkpoint/resource.")
@click.argument("outfile", metavar="OUTFILE", type=click.Path(dir_okay=False, allow_dash=True))
@click.pass_context
def dump(ctx, verbose, quiet, checkpoint, outfile):
    """Dump the instance to a Flux KVS archive (OUTFILE, or - for stdout).

    The format follows OUTFILE's extension: .tar, .tgz, .tar.gz, .tar.bz2,
    .tar.xz, .zip, .cpio; - writes a tar to stdout.
    """
    archive.check_output(outfile)
    progress = _Progress(prog("dump", ctx), quiet, verbose)

    def on_entry(entry, n):
        if verbose:
            click.echo(entry.path, err=True)
        elif progress.due(n):
            progress.show(f"archived {n} keys", n)

    # the archive is written as the instance is read, a batch of jobs at a
    # time (made by two processes, unless each key is listed as it goes)
    with read_session(ctx) as broker:
        try:
            n = archive.write(outfile, batched_entries(broker, checkpoint=checkpoint), stdout=sys.stdout.buffer,
                              on_entry=on_entry, parallel=not verbose)
        except BaseException:
            progress.abort()
            raise
    progress.end(f"archived {n} keys")


def max_size_option(f):
    return click.option(
        "--max-size", metavar="SIZE", callback=_max_size,
        help="Most a compressed archive may decompress to, and the largest entry it may hold "
             "(e.g. 8G; default: 200 times the archive's size, at least 512M).")(f)


def _max_size(ctx, param, value):
    if value is None:
        return None
    try:
        return archive.parse_size(value)
    except archive.ArchiveError as exc:
        raise click.BadParameter(str(exc)) from None


def restore_archive(ctx, path, *, quiet=False, verbose=False, force=False, clock=None, config=None,
                    resources=None, target=None, max_size=None):
    """Read ARCHIVE (with Flux's progress line) and create the instance at target."""
    progress = _Progress(prog("restore", ctx), quiet, verbose)

    def on_entry(entry, keys, blobs):
        if verbose:
            click.echo(f"{entry.path} -> {entry.target}" if entry.is_symlink else entry.path, err=True)
        elif progress.due(keys):
            progress.show(f"restored {keys} keys ({blobs} blobs)", keys)

    try:
        done = restoremod.restore(target, archive.entries(path, stdin=sys.stdin.buffer, max_size=max_size),
                                  force=force, clock=clock, config=config, resources=resources,
                                  source="stdin" if path == "-" else path, on_entry=on_entry)
    except BaseException:
        progress.abort()
        raise
    progress.end(f"restored {done.nkeys} keys ({done.nblobs} blobs)")
    return done.instance


@click.command()
@click.option("-v", "--verbose", is_flag=True, help="List keys on stderr as they are restored.")
@click.option("-q", "--quiet", is_flag=True, help="Don't show periodic progress updates.")
@click.option("-f", "--force", is_flag=True, help="Replace an existing instance.")
@click.option("--clock", type=click.Choice(["real", "virtual"]), default=None,
              help="Clock mode of the restored instance.")
@click.option("-c", "--config", "config_file", metavar="FILE", help="Instance configuration (YAML or TOML).")
@max_size_option
@click.argument("infile", metavar="INFILE", type=click.Path(dir_okay=False, allow_dash=True))
@click.pass_context
def restore(ctx, verbose, quiet, force, clock, config_file, max_size, infile):
    """Create an instance from a Flux KVS archive (INFILE, or - for stdin).

    The instance is created in the selected state directory, as by start.
    """
    cfg = configmod.load_file(config_file) if config_file else None
    inst = restore_archive(ctx, infile, quiet=quiet, verbose=verbose, force=force, clock=clock, config=cfg,
                           target=resolve_state_dir(state_dir(ctx)), max_size=max_size)
    inst.close()
