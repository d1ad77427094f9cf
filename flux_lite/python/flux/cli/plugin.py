"""flux.cli.plugin: Flux's CLI plugins (CLIPlugin), found in FLUX_CLI_PLUGINPATH.

A plugin is a CLIPlugin subclass in a ``*.py`` file of a directory named by
FLUX_CLI_PLUGINPATH (or only FLUX_CLI_PLUGINPATH_OVERRIDE, when set). Its
options get the plugin's prefix (``--myopt`` of prefix ``site`` is
``--site-myopt``, keyword ``site_myopt``); in its callbacks the unprefixed
name still reads and writes the option. ``Jobspec.apply_options(prog=...)``
runs the plugins of that command. flux-lite has no plugins of its own.
"""

from __future__ import annotations

import os
import sys
from typing import Any


class CLIPluginOption:
    """One long option a plugin adds: ``name`` (prefixed), ``dest``, ``kwargs``."""

    def __init__(self, name: str, prefix: str | None, **kwargs: Any) -> None:
        if not name.startswith("--"):
            raise ValueError("Plugins must register only long options.")
        self.name = name.replace("--", f"--{prefix}-", 1) if prefix else name
        # the unprefixed name stays usable in callbacks unless dest= was explicit
        self._unprefixed_dest = None if "dest" in kwargs else name[2:].replace("-", "_")
        kwargs.setdefault("dest", self.name[2:].replace("-", "_"))
        self.kwargs = kwargs

    @property
    def dest(self) -> str:
        return self.kwargs["dest"]


class CLIPlugin:
    """Base class of a plugin for ``prog`` (submit, run, alloc, batch, bulksubmit)."""

    def __init__(self, prog: str, prefix: str | None = "ex", version: Any = None) -> None:
        self.prog = prog[5:] if prog.startswith("flux ") else prog
        self.path: str | None = None
        self.prefix = prefix
        self.version = version
        self.options: list[CLIPluginOption] = []

    def add_option(self, name: str, **kwargs: Any) -> None:
        """Register a long option (``--name``), given the plugin's prefix."""
        self.options.append(CLIPluginOption(name, prefix=self.prefix, **kwargs))

    def preinit(self, args: Any) -> None:
        """Called after the options are parsed, before the jobspec is built."""

    def modify_jobspec(self, args: Any, jobspec: Any) -> None:
        """Called to change the jobspec."""

    def validate(self, jobspec: Any) -> None:
        """Called to check the final jobspec (raise ValueError if invalid)."""


class PluginArgsProxy:
    """The options namespace as a plugin's callbacks see it: unprefixed names
    read and write the prefixed options."""

    __slots__ = ("_ns", "_alias")

    def __init__(self, args: Any, alias: dict) -> None:
        object.__setattr__(self, "_ns", args)
        object.__setattr__(self, "_alias", alias)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ns, self._alias.get(name, name))

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._ns, self._alias.get(name, name), value)


def _searchpath() -> list[str]:
    if "FLUX_CLI_PLUGINPATH_OVERRIDE" in os.environ:
        raw = os.environ["FLUX_CLI_PLUGINPATH_OVERRIDE"]
    else:
        raw = os.environ.get("FLUX_CLI_PLUGINPATH", "")
    return [d for d in raw.split(":") if d.strip()]


def _import_path(path: str) -> Any:
    import importlib.util

    name = "flux.cli.plugins._" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load CLI plugin {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class CLIPluginRegistry:
    """The plugins of one command, loaded from the search path; a plugin whose
    option collides with one already loaded is dropped."""

    def __init__(self, prog: str) -> None:
        self.prog = prog
        self.plugins: list[CLIPlugin] = []
        import glob

        self.plugindirs = _searchpath()
        dests: dict[str, CLIPluginOption] = {}
        for directory in self.plugindirs:
            for path in sorted(glob.glob(os.path.join(directory, "*.py"))):
                module = _import_path(path)
                for attr in dir(module):
                    entry = getattr(module, attr)
                    if (not attr.startswith("_") and isinstance(entry, type) and issubclass(entry, CLIPlugin)
                            and entry is not CLIPlugin):
                        plugin = entry(prog)
                        plugin.path = path
                        if any(opt.dest in dests for opt in plugin.options):
                            continue
                        dests.update((opt.dest, opt) for opt in plugin.options)
                        self.plugins.append(plugin)
        self.options = list(dests.values())

    @staticmethod
    def _alias(plugin: CLIPlugin) -> dict:
        return {opt._unprefixed_dest: opt.dest for opt in plugin.options
                if opt._unprefixed_dest is not None and opt._unprefixed_dest != opt.dest}

    def preinit(self, args: Any) -> None:
        for plugin in self.plugins:
            plugin.preinit(PluginArgsProxy(args, self._alias(plugin)))

    def modify_jobspec(self, args: Any, jobspec: Any) -> None:
        for plugin in self.plugins:
            plugin.modify_jobspec(PluginArgsProxy(args, self._alias(plugin)), jobspec)

    def validate(self, jobspec: Any) -> None:
        for plugin in self.plugins:
            plugin.validate(jobspec)
