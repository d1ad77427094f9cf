"""The option values of ``flux submit`` as Flux's Python API applies them.

What ``Jobspec.apply_options`` and ``flux.job._utils`` compute from
strings: environment rules (``--env``), resource limits (``--rlimit``),
``--signal``, RFC 26 URIs (``--dependency``, ``--taskmap``), ``KEY[=VAL]``
of ``--setopt``/``--setattr``, ``--add-file`` arguments, RFC 37 file
entries and ``--conf`` values. Values only: nothing here reads an instance.

Errors are ValueError (TypeError for a value of the wrong type), with the
option named as Flux names it.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import signal
import stat
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from flux_lite.formats import fsd
from flux_lite.formats.jobspec import set_treedict

__all__ = [
    "decode_signal",
    "decode_duration",
    "signal_option",
    "uri_entry",
    "filter_names",
    "filtered_environment",
    "rlimits",
    "filtered_rlimits",
    "split_commas",
    "parse_keyval",
    "add_file_arg",
    "file_entry",
    "dict_merge",
    "get_treedict",
    "conf_update",
    "xdg_searchpath",
]


# ---------------------------------------------------------------------------
# signals and durations


def decode_signal(value: Any) -> int:
    """A signal number from an int, a numeric string, ``SIGUSR1`` or ``USR1``."""
    if isinstance(value, int):
        return value
    text = str(value)
    try:
        return int(text)
    except ValueError:
        pass
    members = signal.Signals.__members__
    for name in (text, "SIG" + text):
        if name in members:
            return int(members[name])
    raise ValueError(f"signal '{value}' is invalid")


def decode_duration(value: Any) -> float | int:
    """Seconds from a number, a numeric string or an FSD string."""
    if isinstance(value, (int, float)):
        return value
    try:
        return float(value)
    except ValueError:
        return fsd.parse(value)


def signal_option(arg: str | None) -> dict:
    """``--signal=[SIG][@TIME]``: SIGUSR1 and 60 s unless given."""
    sig: Any = signal.SIGUSR1
    tleft: Any = 60
    if arg is not None:
        name, _, when = arg.partition("@")
        sig = name or sig
        tleft = when or tleft
    try:
        signum = decode_signal(sig)
        if signum <= 0:
            raise ValueError("signal must be > 0")
        timeleft = decode_duration(tleft)
    except ValueError as exc:
        raise ValueError(f"--signal={arg}: {exc}") from None
    return {"signum": int(signum), "timeleft": timeleft}


# ---------------------------------------------------------------------------
# RFC 26 URIs


def _number(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def uri_entry(uri: str, name: str = "dependency") -> dict:
    """``SCHEME:VALUE[?k=v&...]`` as the entry Flux puts in a jobspec
    (``--dependency``, ``--taskmap``): ``{"scheme", "value", k: v...}``, a
    key given twice a list, numbers as numbers."""
    from urllib.parse import parse_qs, urlparse

    if not isinstance(uri, str):
        raise TypeError(f"{name} URI must be a string")
    if ":" not in uri:
        uri += ":"
    # a placeholder after the first ':' keeps urlparse from reading an
    # all-digit value as a port
    parsed = urlparse(uri.replace(":", ":FXX", 1))
    if not parsed.scheme or not parsed.path:
        raise ValueError(f'Invalid {name} URI "{uri}"')
    entry: dict[str, Any] = {"scheme": parsed.scheme, "value": parsed.path.replace("FXX", "", 1)}
    for key, values in parse_qs(parsed.query).items():
        conv = [_number(v) for v in values]
        entry[key] = conv if len(conv) > 1 else conv[0]
    return entry


# ---------------------------------------------------------------------------
# environment and resource limits


def _matcher(pattern: str):
    # a pattern in slashes is a regular expression, else a shell glob
    if pattern.startswith("/"):
        return re.compile(pattern[1:].rstrip("/")).match
    return re.compile(fnmatch.translate(pattern)).match


def filter_names(mapping: Mapping, pattern: str, keep: bool = False) -> dict:
    """The items whose names match ``pattern`` (keep=True) or do not."""
    match = _matcher(pattern)
    return {k: v for k, v in mapping.items() if bool(match(k)) == keep}


# what an environment file (--env-file, --env=^FILE) may hold
ENV_FILE_LIMIT = 1 << 20


def filtered_environment(rules: Iterable[str] | None, environ: Mapping | None = None,
                         process_env: Mapping | None = None) -> tuple[dict, dict]:
    """(environment, env-expand) after ``--env`` rules, in order, starting
    from ``environ`` (default: ``process_env``, itself the process's):
    ``-PATTERN`` drops names, ``^FILE`` reads more rules from FILE (one a
    line), ``NAME`` imports the process's matching names not yet set,
    ``NAME=VALUE`` sets a value ($NAME and ${NAME} expanded from the
    environment built so far, then the process's) or, holding a
    ``{{template}}``, leaves it for the job shell (the env-expand option)."""
    from collections import ChainMap
    from string import Template

    process = dict(os.environ) if process_env is None else dict(process_env)
    env = dict(process) if environ is None else dict(environ)
    expand: dict = {}
    for rule in rules or ():
        if rule.startswith("-"):
            env = filter_names(env, rule[1:])
        elif rule.startswith("^"):
            path = os.path.expanduser(rule[1:])
            try:
                with open(path, "rb") as f:
                    data = f.read(ENV_FILE_LIMIT + 1)  # (bounded: /dev/zero has no end)
            except OSError as exc:
                raise ValueError(f"--env: {exc}") from None
            if len(data) > ENV_FILE_LIMIT:
                raise ValueError(f"--env: {path}: file larger than {ENV_FILE_LIMIT // 1024} KiB")
            try:
                more = [line.strip() for line in data.decode("utf-8").splitlines()]
            except UnicodeDecodeError as exc:
                raise ValueError(f"--env: {path}: not UTF-8 text (byte {exc.start})") from None
            env, more_expand = filtered_environment([r for r in more if r], env, process)
            expand.update(more_expand)
        elif "=" not in rule:
            for key, value in filter_names(process, rule, keep=True).items():
                env.setdefault(key, value)
        else:
            name, _, value = rule.partition("=")
            if "{{" in value:
                expand[name] = value
                continue
            try:
                env[name] = Template(value).substitute(ChainMap(env, process))
            except KeyError as exc:
                raise ValueError(f"--env: Variable {exc} not found in {rule}") from None
            except ValueError:
                raise ValueError(f"--env: Unable to substitute {rule}") from None
    return env, expand


# limits a job does not inherit unless asked (as flux submit leaves them out)
_RLIMIT_SKIPPED = ("memlock", "ofile", "msgqueue", "nice", "rtprio", "rttime", "sigpending")


def rlimits(pattern: str = "*") -> dict:
    """Soft limits of this process whose names match ``pattern`` (``nofile``...)."""
    import resource

    match = _matcher(f"RLIMIT_{pattern}".upper())
    found = {name[7:].lower(): resource.getrlimit(getattr(resource, name))[0]
             for name in vars(resource) if name.startswith("RLIMIT_") and match(name)}
    if not found:
        raise ValueError(f'No corresponding rlimit matching "{pattern}"')
    return found


def split_commas(values: Any) -> list[str]:
    """Each value split at commas (a bare string is one value)."""
    if isinstance(values, str):
        values = [values]
    return [part for value in values or () for part in value.split(",")]


def filtered_rlimits(rules: Any = None) -> dict:
    """The limits ``--rlimit`` rules propagate: all but the skipped few, then
    ``-NAME`` drops, ``NAME`` adds the current value, ``NAME=N|unlimited`` sets."""
    import resource

    limits = rlimits()
    for rule in [f"-{name}" for name in _RLIMIT_SKIPPED] + split_commas(rules):
        if rule.startswith("-"):
            limits = filter_names(limits, rule[1:].lower())
            continue
        name, eq, value = rule.partition("=")
        if not eq:
            limits.update(rlimits(name.lower()))
            continue
        if not hasattr(resource, f"RLIMIT_{name.upper()}"):
            raise ValueError(f'Invalid rlimit "{name}"')
        if value in ("unlimited", "infinity", "inf"):
            limits[name.lower()] = resource.RLIM_INFINITY
        else:
            try:
                limits[name.lower()] = int(value)
            except ValueError:
                raise ValueError(f"Invalid value in {name}={value}") from None
    return limits


# ---------------------------------------------------------------------------
# KEY[=VAL], files


def parse_keyval(label: str, keyval: str) -> tuple[str, Any]:
    """``KEY[=VAL]`` of ``--setopt``/``--setattr``: VAL as JSON where it parses,
    else the string; no ``=`` means 1; ``^KEY=FILE`` reads the value from FILE
    (JSON). A FILE that cannot be read raises its OSError, as Flux's does."""
    key, eq, text = keyval.partition("=")
    if key.startswith("^"):
        with open(text if eq else "1", encoding="utf-8") as f:
            try:
                return key.lstrip("^"), json.load(f)
            except ValueError as exc:
                raise ValueError(f"{label}: {text}: {exc}") from None
    if not eq:
        return key, 1
    try:
        return key, json.loads(text)
    except json.JSONDecodeError:
        return key, text


def add_file_arg(arg: str) -> tuple[str, str, int | None]:
    """(name, data, perms) of ``--add-file=[NAME[:PERMS]=]DATA``: DATA is file
    content when it holds a newline (``\\n`` in the argument is one), else a path;
    without NAME the path's base name names it."""
    name, _, data = arg.replace("\\n", "\n").partition("=")
    perms = None
    if not data:
        if "\n" in name:
            raise ValueError("--add-file: file name missing")
        return os.path.basename(name), name, None
    base, colon, mode = name.partition(":")
    if colon:
        try:
            perms = int(mode, 8)
            name = base
        except ValueError:
            pass
    return name, data, perms


def file_entry(data: Any, perms: int | None = None, encoding: str | None = None) -> dict:
    """An RFC 37 file object: a mapping's data as JSON content; a string in a
    given encoding as is; otherwise the content of the file at path ``data``
    (utf-8 text, else base64), with its size and mode."""
    entry: dict[str, Any] = {"mode": (0o600 if perms is None else perms) | stat.S_IFREG}
    if isinstance(data, dict):
        entry["data"] = data
    elif encoding is not None:
        if encoding not in ("base64", "utf-8"):
            raise ValueError(f"invalid encoding: {encoding}")
        entry["data"] = data
        entry["encoding"] = encoding
    else:
        st = os.stat(data)
        entry["size"] = st.st_size
        entry["mode"] = st.st_mode
        with open(data, "rb") as f:
            raw = f.read()
        import base64

        try:
            entry["data"], entry["encoding"] = raw.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            entry["data"], entry["encoding"] = base64.b64encode(raw).decode("ascii"), "base64"
    return entry


# ---------------------------------------------------------------------------
# dotted keys and --conf


def dict_merge(base: Any, new: Mapping) -> dict:
    """``base`` updated by ``new``, nested mappings merged (``base`` is not changed)."""
    out = dict(base or {})
    for key, value in new.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = dict_merge(out[key], value)
        else:
            out[key] = value
    return out


def get_treedict(obj: Mapping, key: str, default: Any = None) -> Any:
    """obj[a][b][c] for key ``a.b.c``, or default when a part is missing."""
    for part in key.split("."):
        if not isinstance(obj, Mapping) or part not in obj:
            return default
        obj = obj[part]
    return obj


def _tomllib() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10 only
        import tomli as tomllib
    return tomllib


def _toml_loads(text: str) -> dict:
    return _tomllib().loads(text)


def _toml_errors() -> tuple:
    return (_tomllib().TOMLDecodeError,)


def xdg_searchpath(environ: Mapping[str, str] | None = None) -> list[str]:
    """Flux's configuration directories in precedence order: $XDG_CONFIG_HOME
    (~/.config), then each of $XDG_CONFIG_DIRS (/etc/xdg), each with flux/."""
    environ = os.environ if environ is None else environ
    home = environ.get("XDG_CONFIG_HOME") or os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".config")
    dirs = [home, *(environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":")]
    return [os.path.join(d, "flux") for d in dirs if d]


def _config_dirs() -> list[str]:
    return [os.path.join(d, "config") for d in xdg_searchpath()]


def _conf_file(path: str, ext: str) -> dict:
    with open(path, "rb") as f:
        raw = f.read()
    return json.loads(raw) if ext == ".json" else _toml_loads(raw.decode("utf-8"))


def conf_update(config: dict | None, value: str) -> dict:
    """``config`` updated by one ``--conf`` value: text with a newline is JSON
    or TOML; ``KEY=VAL`` sets a dotted key (VAL as JSON, else the string); a
    ``.toml``/``.json`` path is read; any other word names a config file in
    the XDG config path (``flux/config/NAME.toml|json``)."""
    config = dict(config or {})
    if "\n" in value:
        try:
            conf = json.loads(value)
        except json.JSONDecodeError:
            try:
                conf = _toml_loads(value)
            except _toml_errors():
                raise ValueError("--conf: failed to parse multiline as TOML or JSON") from None
        return dict_merge(config, conf)
    if "=" in value:
        key, _, text = value.partition("=")
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            parsed = text
        try:
            set_treedict(config, key, parsed)
        except TypeError as exc:
            raise TypeError(f"failed to set {key} to {parsed}: {exc}") from None
        return config
    ext = os.path.splitext(value)[1]
    if ext in (".toml", ".json"):
        try:
            return dict_merge(config, _conf_file(value, ext))
        except OSError as exc:
            raise ValueError(f"--conf: {exc}") from None
        except (json.JSONDecodeError, UnicodeDecodeError, *_toml_errors()) as exc:
            raise ValueError(f"--conf: parse error: {value}: {exc}") from None
    for directory in _config_dirs():
        for ext in (".toml", ".json"):
            path = os.path.join(directory, value + ext)
            if os.path.exists(path):
                try:
                    return dict_merge(config, _conf_file(path, ext))
                except (OSError, json.JSONDecodeError, UnicodeDecodeError, *_toml_errors()) as exc:
                    raise ValueError(f"--conf={value}: {path}: {exc}") from None
    raise ValueError(f"--conf: named config '{value}' not found")
