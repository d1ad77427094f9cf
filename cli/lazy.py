"""Command groups whose commands are imported only when named: the CLI's
command table (CONTRIBUTING's first lazy point), so a command costs what it
touches and `--help` lists every command without importing them all."""

import importlib

import click

from flux_lite.cli.words import adopt


class LazyGroup(click.Group):
    """A group over a table: name -> (module under flux_lite.cli, attribute, short help)."""

    def __init__(self, *args, table, **kwargs):
        super().__init__(*args, **kwargs)
        self.table = table

    def list_commands(self, ctx):
        return sorted(self.table)

    def get_command(self, ctx, name):
        spec = self.table.get(name)
        if spec is None:
            return None
        module = importlib.import_module(f"flux_lite.cli.{spec[0]}")
        # a subcommand parses as its group does (C-style or argparse-style),
        # a top-level command as its Flux counterpart
        c_style = getattr(self, "_c_style", None)
        return adopt(getattr(module, spec[1]), c_style=c_style, name=name)

    def format_commands(self, ctx, formatter):
        rows = [(name, self.table[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)
