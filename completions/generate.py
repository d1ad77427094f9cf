#!/usr/bin/env python3
"""Write (or check) the committed shell completion scripts.

    python completions/generate.py          # rewrite the three scripts
    python completions/generate.py --check  # exit 1 if any is out of date

The scripts are what click's own completion support prints for
``_FLUX_LITE_COMPLETE={bash,zsh,fish}_source flux-lite`` (see
flux_lite.cli._complete.completion_source). They only tell the shell how to
call flux-lite back at each TAB: the candidates themselves (subcommands,
options, job ids, update keys, housekeeping targets, module names) come from
the installed flux-lite at completion time, so adding a command or an option
does not make them stale; a change of program name or of click's templates does.

Nothing here depends on the machine it runs on: no instance, no PATH lookup.
"""

import argparse
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent

# shell -> committed file name (the names bash-completion, zsh's fpath and
# fish's vendor_completions.d look for)
FILES = {
    "bash": "flux-lite.bash",
    "zsh": "_flux-lite",
    "fish": "flux-lite.fish",
}


def render(shell):
    # needs flux-lite installed (pip install -e .): cli/ is importable only as flux_lite.cli
    from flux_lite.cli._complete import completion_source
    from flux_lite.cli.main import cli

    return completion_source(shell, cli)


def stale(directory=HERE):
    """Names of the committed scripts that differ from what would be generated."""
    out = []
    for shell, name in FILES.items():
        path = pathlib.Path(directory) / name
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != render(shell):
            out.append(name)
    return out


def write(directory=HERE):
    for shell, name in FILES.items():
        (pathlib.Path(directory) / name).write_text(render(shell), encoding="utf-8")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale scripts (exit 1 if any)")
    parser.add_argument("--dir", default=str(HERE), help="directory of the scripts (default: this one)")
    args = parser.parse_args(argv)
    if args.check:
        names = stale(args.dir)
        for name in names:
            print(f"{name}: out of date (run: python completions/generate.py)", file=sys.stderr)
        return 1 if names else 0
    write(args.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
