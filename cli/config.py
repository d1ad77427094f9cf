"""flux-lite config: print or replace the instance configuration."""

import json

import click

from flux_lite.cli.common import instance, session
from flux_lite.errors import FluxLiteError


@click.group()
def config():
    """Instance configuration (YAML tables mirroring Flux's TOML ones)."""


@config.command()
@click.argument("key", required=False)
def get(key):
    """Print the configuration, or the value at KEY (dotted), as JSON."""
    from flux_lite import config as configmod

    cfg = instance().config
    if key:
        value = configmod.get_path(cfg, key)
        if value is None:
            raise FluxLiteError(f"{key} is not set")
        cfg = value
    # strings print raw, everything else as compact JSON (as flux config get)
    click.echo(cfg if isinstance(cfg, str) else json.dumps(cfg, separators=(",", ":")))


@config.command()
@click.argument("file", required=False, default="-")
def load(file):
    """Replace the live configuration with FILE (or stdin), validated first."""
    from flux_lite import admin
    from flux_lite import config as configmod

    if file == "-":
        cfg = configmod.load_text(configmod.read_input("-", "config"), source="stdin")
    else:
        cfg = configmod.load_file(file)
    with session() as broker:
        admin.config_load(broker, cfg)
