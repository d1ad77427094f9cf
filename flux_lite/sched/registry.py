"""The scheduler modules: one file each, found by name.

A scheduler module is a :class:`~flux_lite.sched.base.Scheduler` subclass
decorated with :func:`register`, in a file of its own under flux_lite/sched/
named after the module: ``sched-NAME`` lives in ``NAME.py`` (dashes become
underscores). The class declares its module name, the policies it
implements, its module arguments (parser, completion values, help) and a
description; the configuration's ``sched.policy`` values, the loader, and
the ``module``/``sched``/``replay`` commands and their completions all come
from here. So adding a policy is adding one file (and its man-page
paragraph and tests).

No list of the package's other files (pool, base, loader, ...) is kept: a
file is a scheduler module if importing it registers a class, so a new
infrastructure file needs no entry anywhere. The files are those of the
package's ``__path__`` as it is when asked (a test may add a directory of
its own to it), read with one directory listing per path.

Loading a module by name imports only its file; listing them all imports
every file of the package that names this module (only configuration
checks, ``sched reload --policy``, ``module load`` and completion need that).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

from flux_lite import config, stored
from flux_lite.errors import ConfigError

if TYPE_CHECKING:
    from flux_lite.sched.base import ModuleArg, Scheduler

PACKAGE = __name__.rpartition(".")[0]  # flux_lite.sched
DEFAULT_MODULE = "sched-simple"  # listed first, and the default policy's module

_MODULES: dict[str, type[Scheduler]] = {}
# (package path, {module name: directory} of its files) as last listed, and the
# listing whose scheduler modules have all been imported
_files: tuple[tuple[str, ...], dict[str, str]] = ((), {})
_imported: dict[str, str] | None = None


def _stem(name: str) -> str | None:
    """The file (module name in the package) of scheduler module `name`."""
    if not name.startswith("sched-"):
        return None
    return name[len("sched-"):].replace("-", "_")


def register(cls: type[Scheduler]) -> type[Scheduler]:
    """Class decorator: make a scheduler module known by its name.

    The class must be defined in the package file named after it: that is
    how loading by name finds it without importing every file."""
    stem = _stem(cls.name)
    if stem is None or cls.__module__ != f"{PACKAGE}.{stem}":
        raise TypeError(f"scheduler module {cls.name!r} must be defined in {PACKAGE}.{stem or '...'}"
                        f" (it is in {cls.__module__}) and be named sched-...")
    _MODULES[cls.name] = cls
    return cls


# companion modules: loaded and removed by name, but not schedulers (Fluxion's
# resource and feasibility modules beside its queue manager), same file rule
_COMPANIONS: dict[str, type] = {}


def register_companion(cls: type) -> type:
    """Class decorator: a module that is not a scheduler (no sched slot),
    defined in the package file named after it as scheduler modules are."""
    stem = _stem(cls.name)  # type: ignore[attr-defined]
    if stem is None or cls.__module__ != f"{PACKAGE}.{stem}":
        raise TypeError(f"module {cls.name!r} must be defined in {PACKAGE}.{stem or '...'}")  # type: ignore
    _COMPANIONS[cls.name] = cls  # type: ignore[attr-defined]
    return cls


def _class_in(table: dict, name: str) -> Any:
    """The class registered as name in table, importing its file if need be (None if none)."""
    stem = _stem(name)
    if stem is None or stem not in _package_files():
        return None
    cls = table.get(name)
    if cls is None:
        importlib.import_module(f"{PACKAGE}.{stem}")
        cls = table.get(name)
    return cls


def companion_class(name: str) -> type | None:
    """The companion module called name, or None."""
    return _class_in(_COMPANIONS, name)


def companion_names() -> tuple[str, ...]:
    modules()
    files = _package_files()
    return tuple(sorted(n for n in _COMPANIONS if _stem(n) in files))


def all_module_names() -> tuple[str, ...]:
    """Scheduler and companion modules: the default first, then by name."""
    names = set(module_names()) | set(companion_names())
    return tuple(sorted(names, key=lambda n: (n != DEFAULT_MODULE, n)))


def _package_files() -> dict[str, str]:
    """{module name: directory} of the package's files (not ``_``-prefixed), for
    its path as it is now (the first directory holding a name wins, as for import)."""
    global _files
    path = tuple(importlib.import_module(PACKAGE).__path__)
    if _files[0] != path:
        files: dict[str, str] = {}
        for directory in path:
            try:
                entries = os.listdir(directory)
            except OSError:
                continue
            for entry in entries:
                if entry.endswith(".py") and not entry.startswith("_") and entry[:-3].isidentifier():
                    files.setdefault(entry[:-3], directory)
        _files = (path, files)
    return _files[1]


def _may_register(stem: str, directory: str) -> bool:
    """Whether importing a file could register a class: it is imported
    already, or its source names this module (it must import register).
    The others (pool, store, ...) are not imported just to find that out."""
    if f"{PACKAGE}.{stem}" in sys.modules:
        return True
    try:
        with open(os.path.join(directory, f"{stem}.py"), "rb") as f:
            return b"registry" in f.read()
    except OSError:
        return True  # let the import say what is wrong


def module_class(name: str) -> type[Scheduler] | None:
    """The scheduler module called name, or None."""
    return _class_in(_MODULES, name)


def modules() -> dict[str, type[Scheduler]]:
    """Every scheduler module by name; the default one first, then by name."""
    global _imported
    files = _package_files()
    if _imported is not files:
        for stem, directory in sorted(files.items()):
            if _may_register(stem, directory):
                importlib.import_module(f"{PACKAGE}.{stem}")
        _imported = files
    # registered classes whose file is no longer on the path are not listed
    found = [name for name in _MODULES if _stem(name) in files]
    return {name: _MODULES[name] for name in sorted(found, key=lambda n: (n != DEFAULT_MODULE, n))}


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
    if value.get("path") is not None:  # a module file (sched.hosted): stored.check_sched_module checks it
        return
    if module_class(value["name"]) is None:
        raise ValueError(f"name must be one of {', '.join(module_names())}")


config.register_check("sched.policy", _check_policy)
stored.register_check("sched.module", _check_module_key)
