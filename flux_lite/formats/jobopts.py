"""The job options of flux submit/run/batch, recorded in the jobspec as
Flux's Jobspec records them: the environment and its rules (--env,
--env-remove, --env-file), shell options (-o/--setopt, --signal,
--taskmap, --unbuffered), files (--add-file), KEY[=VAL] values with the
^FILE form, and the per-resource layout (--tasks-per-node, --cores...).

Pure functions of their arguments and the files they name; errors are
ValueError with flux submit's words.
"""

import fnmatch
import json
import os
import re
import signal as signal_module
import stat
from collections import ChainMap
from string import Template
from typing import Any
from urllib.parse import parse_qs, urlparse


def _pattern(pattern: str) -> "re.Pattern[str]":
    # a leading '/' makes a regular expression of the rest (less a final '/'),
    # anything else is a shell glob
    if pattern.startswith("/"):
        return re.compile(pattern[1:].rstrip("/"))
    return re.compile(fnmatch.translate(pattern))


def _matching(env: dict, pattern: str, keep: bool) -> dict:
    regex = _pattern(pattern)
    return {k: v for k, v in env.items() if bool(regex.match(k)) == keep}


def filtered_environment(rules: list[str] | None, environ: dict | None = None,
                         process_env: dict | None = None) -> tuple[dict, dict]:
    """The job's environment after RULES, in order, from environ (default:
    process_env, itself the process's): ``-PATTERN`` removes, ``^FILE``
    reads rules from FILE (one a line), ``VAR=VALUE`` sets (``$VAR`` and
    ``${VAR}`` expanded from the environment built so far, then the
    process's), ``PATTERN`` copies the process's matching variables not set
    yet. Returns (environment, env-expand): values holding ``{{`` are the
    job shell's to expand (the env-expand shell option)."""
    process_env = dict(os.environ) if process_env is None else process_env
    env = dict(process_env) if environ is None else environ
    expand: dict = {}
    for rule in rules or ():
        if rule.startswith("-"):
            env = _matching(env, rule[1:], keep=False)
        elif rule.startswith("^"):
            path = os.path.expanduser(rule[1:])
            try:
                with open(path, encoding="utf-8") as fp:
                    lines = [line.strip() for line in fp]
            except OSError as exc:
                raise ValueError(f"--env: {exc}") from None
            env, more = filtered_environment(lines, env, process_env)
            expand.update(more)
        else:
            var, eq, value = rule.partition("=")
            if not eq:
                for key, val in _matching(process_env, var, keep=True).items():
                    env.setdefault(key, val)
            elif "{{" in value:
                expand[var] = value
            else:
                try:
                    env[var] = Template(value).substitute(ChainMap(env, process_env))
                except ValueError:
                    raise ValueError(f"--env: Unable to substitute {rule}") from None
                except KeyError as exc:
                    raise ValueError(f"--env: Variable {exc} not found in {rule}") from None
    return env, expand


def decode_signal(value: str) -> int:
    """A signal number, or a name with or without SIG."""
    try:
        return int(value)
    except ValueError:
        pass
    for name in (value, "SIG" + value):
        if name.startswith("SIG") and name in signal_module.Signals.__members__:
            return int(signal_module.Signals[name])
    raise ValueError(f"signal '{value}' is invalid")


def parse_signal(arg: str, parse_fsd: Any) -> dict:
    """--signal=[SIG][@TIME]: the signal shell option, {signum, timeleft}
    (default SIGUSR1, 60 seconds before the job's expiration); TIME is
    seconds or an FSD (parse_fsd)."""
    sig, _, when = arg.partition("@")
    try:
        signum = decode_signal(sig or "SIGUSR1")
        if signum <= 0:
            raise ValueError("signal must be > 0")
    except ValueError as exc:
        raise ValueError(f"--signal={arg}: {exc}") from None
    timeleft: Any = 60
    if when:
        try:
            timeleft = float(when)
        except ValueError:
            try:
                timeleft = parse_fsd(when)
            except ValueError as exc:
                raise ValueError(f"--signal={arg}: {exc}") from None
    return {"signum": signum, "timeleft": timeleft}


def _number(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def uri_entry(uri: str, name: str) -> dict:
    """SCHEME[:VALUE][?KEY=VAL...] as an entry {scheme, value, KEY: VAL}
    (a value of several is a list; numbers are numbers), as --taskmap and
    --dependency record it."""
    text = uri if ":" in uri else uri + ":"
    parsed = urlparse(text.replace(":", ":FXX", 1))  # (an all-digit path is not a port)
    if not parsed.scheme or not parsed.path:
        raise ValueError(f'Invalid {name} URI "{text}"')
    entry: dict = {"scheme": parsed.scheme, "value": parsed.path.replace("FXX", "", 1)}
    for key, values in parse_qs(parsed.query).items():
        entry[key] = [_number(v) for v in values] if len(values) > 1 else _number(values[0])
    return entry


def file_entry(arg: str) -> tuple[str, dict]:
    """--add-file=[NAME[:PERMS]=]PATH|DATA: (name, RFC 37 file object).
    DATA is text holding a newline (``\\n`` as typed is one); a PATH is read
    (UTF-8, else base64) with its mode and size."""
    perms = None
    name, eq, data = arg.replace("\\n", "\n").partition("=")
    if not eq or not data:
        if "\n" in name:
            raise ValueError("--add-file: file name missing")
        data, name = name, os.path.basename(name)
    else:
        base, colon, permtext = name.partition(":")
        try:
            perms = int(permtext, 8) if colon else None
            name = base if colon else name
        except ValueError:
            perms = None  # the ':' is part of the name
    try:
        if "\n" in data:
            ref = {"mode": (0o600 if perms is None else perms) | stat.S_IFREG, "data": data, "encoding": "utf-8"}
        else:
            st = os.stat(data)
            with open(data, "rb") as fp:
                content = fp.read()
            ref = {"mode": st.st_mode, "size": st.st_size}
            try:
                ref.update(data=content.decode("utf-8"), encoding="utf-8")
            except UnicodeError:
                import base64

                ref.update(data=base64.b64encode(content).decode("ascii"), encoding="base64")
    except OSError as exc:
        raise ValueError(f"--add-file={arg}: {exc}") from None
    return name, ref


def parse_keyval(label: str, keyval: str) -> tuple[str, Any]:
    """KEY[=VAL] of --setopt/--setattr: VAL as JSON when it parses, else the
    text; no VAL is 1; ^KEY=FILE takes the JSON in FILE."""
    key, eq, text = keyval.partition("=")
    if key.startswith("^"):
        key = key.lstrip("^")
        try:
            with open(text if eq else "1", encoding="utf-8") as fp:
                content = fp.read()
        except OSError as exc:
            raise ValueError(f"{label}: {exc}") from None
        try:
            return key, json.loads(content)
        except ValueError as exc:
            raise ValueError(f"{label}: {text}: {exc}") from None
    if not eq:
        return key, 1
    try:
        return key, json.loads(text)
    except ValueError:
        return key, text


def set_path(obj: dict, key: str, value: Any) -> None:
    """obj[a][b][c] = value for key "a.b.c", creating dicts on the way."""
    head, dot, rest = key.partition(".")
    while dot:
        child = obj.setdefault(head, {})
        if not isinstance(child, dict):
            raise ValueError(f"failed to set {key}: {head} is not an object")
        obj = child
        head, dot, rest = rest.partition(".")
    obj[head] = value


def set_shell_option(jobspec: dict, key: str, value: Any) -> None:
    set_path(jobspec.setdefault("attributes", {}).setdefault("system", {}), "shell.options." + key, value)


def set_environment(jobspec: dict, env: dict) -> None:
    """attributes.system.environment, placed right after duration as Flux's
    Jobspec factories set it (kept where it is when present)."""
    system = jobspec.setdefault("attributes", {}).setdefault("system", {})
    if "environment" in system or "duration" not in system:
        system["environment"] = env
        return
    ordered = {}
    for key, value in system.items():
        ordered[key] = value
        if key == "duration":
            ordered["environment"] = env
    system.clear()
    system.update(ordered)


def set_unbuffered(jobspec: dict) -> None:
    """-u/--unbuffered: no buffering of the output streams, and the
    output and input batch timeouts cut (50 ms, 0)."""
    set_shell_option(jobspec, "output.stdout.buffer.type", "none")
    set_shell_option(jobspec, "output.stderr.buffer.type", "none")
    set_shell_option(jobspec, "output.batch-timeout", 0.05)
    set_shell_option(jobspec, "input.batch-timeout", 0.0)


def per_resource(command: list[str], ncores: int | None, nnodes: int | None, per_type: str | None,
                 per_count: int | None, gpus_per_node: int | None, exclusive: bool) -> dict:
    """The jobspec of --cores / --tasks-per-node / --tasks-per-core /
    --gpus-per-node: slots of whole resources, the tasks laid out by the
    per-resource shell option."""
    if ncores is not None and ncores < 1:
        raise ValueError("ncores must be an integer >= 1")
    if gpus_per_node is not None:
        if gpus_per_node < 0:
            raise ValueError("gpus_per_node must be an integer >= 0")
        if not nnodes:
            raise ValueError("gpus_per_node must be specified with nnodes")
    if nnodes is not None:
        if nnodes < 1:
            raise ValueError("nnodes must be an integer >= 1")
    elif exclusive:
        raise ValueError("exclusive can only be set with a node count")
    if nnodes and ncores:
        if ncores < nnodes:
            raise ValueError("number of cores cannot be less than nnodes")
        if ncores % nnodes:
            raise ValueError("number of cores must be evenly divisible by node count")
        nslots, slot_size = 1, ncores // nnodes
    elif ncores:
        nslots, slot_size = ncores, 1
    elif nnodes:
        if not exclusive:
            raise ValueError("Specifying nnodes also requires ncores or exclusive")
        nslots, slot_size = 1, 1
    else:
        raise ValueError("must specify node or core count with per_resource")
    children: list = [{"type": "core", "count": slot_size}]
    if gpus_per_node:
        children.append({"type": "gpu", "count": gpus_per_node})
    top: dict = {"type": "slot", "count": nslots, "with": children, "label": "task"}
    if nnodes:
        node: dict = {"type": "node", "count": nnodes}
        if exclusive:
            node["exclusive"] = True
        node["with"] = [top]
        top = node
    system: dict = {"duration": 0}
    if per_type is not None:
        system["shell"] = {"options": {"per-resource": {"type": per_type, "count": per_count}}}
    return {"resources": [top], "tasks": [{"command": list(command), "slot": "task", "count": {"per_slot": 1}}],
            "attributes": {"system": system}, "version": 1}
