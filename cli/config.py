"""flux-lite config: print or replace the instance configuration."""

import json

import click
from flux_lite.cli.common import instance, session

from flux_lite import admin
from flux_lite import config as configmod
from flux_lite.errors import ConfigError, FluxLiteError


@click.group()
def config():
    """Instance configuration (Flux's TOML tables; TOML, YAML or JSON)."""


@config.command()
@click.argument("key", required=False)
def get(key):
    """Print the configuration, or the value at KEY (dotted), as JSON."""
    cfg = instance().config
    if key:
        value = configmod.get_path(cfg, key)
        if value is None:
            raise FluxLiteError(f"{key} is not set")
        cfg = value
    # strings print raw, everything else as compact JSON, in UTF-8 (as flux config get)
    click.echo(cfg if isinstance(cfg, str) else json.dumps(cfg, separators=(",", ":"), ensure_ascii=False))


@config.command()
@click.argument("path", required=False, type=click.Path())
def load(path):
    """Replace the live configuration with PATH (a TOML, YAML or JSON file, or
    a directory of *.toml files) or stdin, validated first."""
    if path is None or path == "-":
        try:
            cfg = configmod.load_text(configmod.read_input("-", "config"), source="stdin", check=False)
        except ConfigError as exc:
            raise FluxLiteError(f"parse error: {exc}") from None
    else:
        try:
            cfg = configmod.load_file(path, check=False)
        except ConfigError as exc:
            raise FluxLiteError(f"Error parsing config: {exc}") from None
    try:
        with session() as broker:
            admin.config_load(broker, cfg)
    except ConfigError as exc:
        # the module whose table was refused, as Flux's config.load reports it
        raise FluxLiteError(f"load: error updating {_module_of(str(exc))}: {exc}") from None


@config.command("reload")
def reload_():
    """Reload the configuration from $FLUX_CONF_DIR (a directory of *.toml
    files, or a file), the path Flux's brokers read theirs from."""
    import os

    path = os.environ.get("FLUX_CONF_DIR")
    if not path:
        raise FluxLiteError("reload: no configuration path: flux-lite keeps none from start "
                            "(set FLUX_CONF_DIR, or use config load PATH)")
    try:
        cfg = configmod.load_file(path, check=False)
    except ConfigError as exc:
        raise FluxLiteError(f"Error parsing config: {exc}") from None
    try:
        with session() as broker:
            admin.config_load(broker, cfg)
    except ConfigError as exc:
        raise FluxLiteError(f"reload: error updating {_module_of(str(exc))}: {exc}") from None


def _module_of(message):
    """The Flux module that would refuse a table (named in its message)."""
    for prefix, module in (("job-manager", "job-manager"), ("[job-manager", "job-manager"), ("resource", "resource"),
                           ("queues", "job-ingest"), ("[queues", "job-ingest"), ("policy", "job-ingest"),
                           ("the [policy]", "job-ingest"), ("error parsing [resource]", "resource"),
                           ("error parsing [", "job-ingest"),
                           ("instance", "job-manager"), ("sched", "sched-simple"),
                           ("error creating housekeeping", "job-manager"), ("exclude set", "resource"),
                           ("error decoding exclude set", "resource")):
        if message.startswith(prefix):
            return module
    return "config"
