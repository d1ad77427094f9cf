"""The scheduler modules: one file each, found by name.

A scheduler module is a :class:`~flux_lite.sched.base.Scheduler` subclass
decorated with :func:`register`, in a file of its own under flux_lite/sched/
named after the module: ``sched-NAME`` lives in ``NAME.py`` (dashes become
underscores). The class declares its module name, the policies it
implements, its module arguments (parser, completion values, help) and a
description; the configuration's ``sched.policy`` values, the loader, and
the ``module``/``sched`` commands and their completions all come from here.
So adding a policy is adding one file (and its tests).

Loading a module by name imports only its file; listing them all imports
every file in the package (only configuration checks, ``sched reload
--policy`` and completion need that).
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING

from flux_lite import config, stored
from flux_lite.errors import ConfigError

if TYPE_CHECKING:
    from flux_lite.sched.base import ModuleArg, Scheduler

# the package's files that are not scheduler modules
INFRASTRUCTURE = frozenset({"base", "pool", "loader", "registry", "preview"})
DEFAULT_MODULE = "sched-simple"  # listed first, and the default policy's module

_MODULES: dict[str, type[Scheduler]] = {}
_scanned = False


def register(cls: type[Scheduler]) -> type[Scheduler]:
    """Class decorator: make a scheduler module known by its name."""
    _MODULES[cls.name] = cls
    return cls


def module_class(name: str) -> type[Scheduler] | None:
    """The scheduler module called name, or None."""
    cls = _MODULES.get(name)
    if cls is None and name.startswith("sched-") and not _scanned:
        stem = name[len("sched-"):].replace("-", "_")
        if stem.isidentifier() and stem not in INFRASTRUCTURE:
            try:
                importlib.import_module(f"flux_lite.sched.{stem}")
            except ImportError:
                return None
        cls = _MODULES.get(name)
    return cls


def modules() -> dict[str, type[Scheduler]]:
    """Every scheduler module by name; the default one first, then by name."""
    global _scanned
    if not _scanned:
        import flux_lite.sched as package

        for info in pkgutil.iter_modules(package.__path__):
            if info.name not in INFRASTRUCTURE and not info.name.startswith("_"):
                importlib.import_module(f"flux_lite.sched.{info.name}")
        _scanned = True
    return {name: _MODULES[name] for name in sorted(_MODULES, key=lambda n: (n != DEFAULT_MODULE, n))}


def module_names() -> tuple[str, ...]:
    return tuple(modules())


def policies() -> tuple[str, ...]:
    """Every sched.policy value, module by module, in each module's order."""
    return tuple(p for cls in modules().values() for p in cls.policies)


def policy_module(policy: str) -> type[Scheduler]:
    """The module implementing a policy (KeyError if none does)."""
    for cls in modules().values():
        if policy in cls.policies:
            return cls
    raise KeyError(policy)


def default_policy() -> str:
    """The policy used when the configuration names none: the default module's first."""
    cls = module_class(DEFAULT_MODULE)
    assert cls is not None, DEFAULT_MODULE
    return cls.policies[0]


def module_args(name: str) -> tuple[ModuleArg, ...]:
    cls = module_class(name)
    return () if cls is None else cls.module_args


# The layers below cannot know the modules: install their checks from here.
def _check_policy(policy: object) -> None:
    known = policies()
    if policy not in known:
        raise ConfigError(f"sched.policy: expected one of {', '.join(known)}, got {policy!r}")


def _check_module_key(value: dict) -> None:
    if module_class(value["name"]) is None:
        raise ValueError(f"name must be one of {', '.join(module_names())}")


config.register_check("sched.policy", _check_policy)
stored.register_check("sched.module", _check_module_key)
