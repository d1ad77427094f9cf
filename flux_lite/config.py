"""Instance configuration: Flux's TOML tables, read from TOML, YAML or JSON.

Validation is strict: an unknown key or a bad value is refused with the key's
name, before anything is changed. The validated config is stored as JSON in
the KVS (key ``config``), so commands that do not read YAML never import it.
"""

import json
import re

from flux_lite.errors import ConfigError, FormatError

# key -> (kind, children) ; kinds: table, fsd, int, bool, str, list, any
HOUSEKEEPING_KEYS = {
    "command",
    "release-after",
    "exit-on-first-error",
    "use-systemd-unit",
    # flux-lite's simulation of what the housekeeping command does
    "duration",
    "rank-durations",
    "fail-ranks",
    "drain-on-failure",
}



def __getattr__(name):
    # POLICIES: every scheduler module's policies (flux_lite.sched.registry),
    # computed on first use: most commands never validate a configuration
    if name == "POLICIES":
        from flux_lite.sched import registry

        return registry.policies()
    raise AttributeError(name)


# Tables of Flux's configuration that flux-lite has nothing to simulate with:
# an admin's conf.d may hold them, and they are accepted and ignored.
FLUX_ONLY_TABLES = (
    "access", "archive", "bootstrap", "broker", "content", "cron", "heartbeat", "ingest",
    "job-info", "kvs", "rexec", "sched-fluxion-qmanager", "sched-fluxion-resource", "systemd",
    "tbon",
)


def load_text(text, source="config", fmt=None, check=True):
    """Parse TOML, YAML or JSON text into a dict, then validate it (unless
    check is false: then the caller validates, as a config.load request does).

    fmt is "toml", "yaml" or "json"; None guesses: JSON, else TOML when the
    text looks like TOML (tables or KEY = VALUE lines), else YAML.
    """
    if not text.strip():
        return validate({}) if check else {}
    if fmt is None:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError:
            fmt = "toml" if _looks_like_toml(text) else "yaml"
        except ValueError:
            fmt = "json"  # JSON with an integer past Python's digit limit: said below
        else:
            fmt = "json"
    if fmt == "json":
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{source}:{exc.lineno}: {exc.msg}") from None
        except ValueError:
            raise _too_big_integer(text, source, ":") from None
    elif fmt == "toml":
        obj = parse_toml(text, source)
    else:
        obj = _parse_yaml(text, source)
    if obj is None:
        obj = {}
    if not isinstance(obj, dict):
        raise ConfigError(f"{source}: top level must be a table")
    return validate(obj) if check else obj


def _too_big_integer(text, source, sep):
    """An integer of thousands of digits, past what Python converts (its error
    gives no position): jansson's words for it, with its line."""
    digits = re.search(r"\d{4000,}", text)
    line = text.count("\n", 0, digits.start()) + 1 if digits else 1
    return ConfigError(f"{source}{sep}{line}: too big integer")


def _looks_like_toml(text):
    import re

    return re.search(r"^\s*(\[\[?[^\]]+\]\]?\s*(#.*)?|[A-Za-z0-9_.\"'-]+\s*=.*)$", text, re.M) is not None


def parse_toml(text, source="config"):
    """TOML text -> dict (tomllib; tomli before Python 3.11). Errors name the line."""
    import re
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        obj = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        match = re.search(r"\s*\(at line (\d+), column \d+\)$", msg)
        if match:
            raise ConfigError(f"{source}:{match.group(1)}: {msg[:match.start()]}") from None
        raise ConfigError(f"{source}: {msg}") from None
    except ValueError:
        raise _too_big_integer(text, source, ":") from None
    return _plain(obj)


def _plain(value):
    """TOML and YAML dates and times as strings: the stored config is JSON."""
    import datetime

    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_plain(v) for v in value]
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        raise ConfigError("binary values are not allowed")
    return value


def _parse_yaml(text, source):
    from flux_lite.formats.bounds import flow_depth_exceeds

    if flow_depth_exceeds(text):
        raise ConfigError(f"{source}: nested too deeply")
    import yaml  # only commands that read YAML pay for it

    try:
        obj = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f": line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{source}{where}: {problem}") from None
    except (ValueError, TypeError, OverflowError) as exc:
        if "integer string conversion" in str(exc):
            raise _too_big_integer(text, source, ": line ") from None
        # e.g. a date that does not exist (2026-02-30)
        raise ConfigError(f"{source}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{source}: nested too deeply") from None
    check_size(obj, source)
    try:
        return _plain(obj)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


# bounds on what one input may cost: bytes read, and values after YAML
# alias expansion (563 bytes of aliases can name a billion strings)
MAX_INPUT = 1 << 20
MAX_VALUES = 100000


def read_input(path, what="file", limit=MAX_INPUT):
    """The UTF-8 text of path ('-' is stdin), refused past limit bytes
    (/dev/zero included) or when it is not text."""
    import sys

    try:
        if path == "-":
            data = sys.stdin.buffer.read(limit + 1)
        else:
            with open(path, "rb") as f:
                data = f.read(limit + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror}") from None
    where = "stdin" if path == "-" else path
    if len(data) > limit:
        raise ConfigError(f"{where}: {what} larger than {limit // 1024} KiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}: not UTF-8 text (byte {exc.start})") from None


def check_size(obj, source, limit=MAX_VALUES):
    """Refuse a parsed document with more than limit values, aliases expanded."""
    from flux_lite.formats.bounds import count_values

    if count_values(obj, limit) > limit:
        raise ConfigError(f"{source}: more than {limit} values (YAML aliases expand to too much)")


def load_file(path, check=True):
    """A config file (TOML, YAML or JSON, by extension or content) or, as
    Flux reads a config directory, every DIR/*.toml merged in name order."""
    from pathlib import Path

    path = Path(path)
    try:
        is_dir = path.is_dir()
    except OSError:
        is_dir = False  # (a name too long): reading it reports the error
    if is_dir:
        merged = {}
        try:
            files = sorted(path.glob("*.toml"))
        except OSError as exc:
            raise ConfigError(f"{path}: {exc.strerror}") from None
        for file in files:
            _merge(merged, parse_toml(_read(file), str(file)))
        return validate(merged) if check else merged
    fmt = {".toml": "toml", ".json": "json", ".yaml": "yaml", ".yml": "yaml"}.get(path.suffix.lower())
    return load_text(_read(path), source=str(path), fmt=fmt, check=check)


def _read(path):
    return read_input(str(path), "config")


def _merge(into, obj):
    """Later files' tables update earlier ones key by key (as Flux merges conf.d)."""
    for key, value in obj.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _table(obj, key):
    if not isinstance(obj, dict):
        raise ConfigError(f"{key}: must be a table")
    return obj


def _unknown(obj, allowed, prefix):
    for key in obj:
        if key not in allowed:
            raise ConfigError(f"{prefix}: unknown key '{key}'")


def _checked(value, key, allowed):
    """value, checked to be a table whose keys are all in allowed."""
    _unknown(_table(value, key), allowed, key)
    return value


def _section(parent, name, allowed, prefix=""):
    """The table parent[name], checked (None when absent)."""
    if name not in parent:
        return None
    return _checked(parent[name], prefix + name, allowed)


def _fsd(value, key, c_syntax=True):
    from flux_lite.formats import fsd

    try:
        if isinstance(value, bool):
            raise ValueError
        if isinstance(value, (int, float)):
            if value < 0:
                raise ValueError
            return float(value)
        return fsd.parse_config(str(value)) if c_syntax else fsd.parse(str(value))
    except (ValueError, FormatError):
        raise ConfigError(f"{key} FSD parse error") from None


def _posint(value, key, allow_unlimited=False):
    if allow_unlimited and value == "unlimited":
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        extra = " or 'unlimited'" if allow_unlimited else ""
        raise ConfigError(f"{key}: expected a positive integer{extra}, got {value!r}")
    return value


def _json_type(value):
    """A value's JSON type as jansson names it in its errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    for kind, name in ((int, "integer"), (float, "real"), (str, "string"), (list, "array"), (dict, "object")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _bool(value, key):
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    return value


def validate(cfg):
    """Check every table flux-lite knows; return cfg unchanged when valid."""
    _unknown(cfg, ("resource", "instance", "policy", "queues", "job-manager", "sched", "clock", "exec")
             + FLUX_ONLY_TABLES, "config")
    res = _section(cfg, "resource", ("config", "exclude", "noverify", "norestrict"))
    if res is not None:
        if "config" in res:
            entries = res["config"]
            # librlist's words, through the resource module's
            if not isinstance(entries, list):
                raise ConfigError("error parsing [resource.config] array: resource config must be an array")
            if not entries:
                raise ConfigError("error parsing [resource.config] array: no hosts configured")
            for i, ent in enumerate(entries):
                key = f"resource.config[{i}]"
                _checked(ent, key, ("hosts", "cores", "gpus", "properties"))
                if not isinstance(ent.get("hosts"), str):
                    raise ConfigError(f"{key}.hosts: required hostlist string")
                from flux_lite.formats.hostlist import Hostlist

                try:
                    Hostlist.parse(ent["hosts"])
                except FormatError as exc:
                    raise ConfigError(f"{key}.hosts: {exc}") from None
                for idkey in ("cores", "gpus"):
                    if idkey in ent:
                        _idset_or_count(ent[idkey], f"{key}.{idkey}")
                props = ent.get("properties", [])
                if not isinstance(props, list) or not all(isinstance(p, str) and p for p in props):
                    raise ConfigError(f"{key}.properties: must be a list of strings")
        if "exclude" in res:
            if not isinstance(res["exclude"], str):
                # Flux's unpack of the [resource] table
                raise ConfigError("error parsing [resource] configuration: "
                                  f"Expected string, got {_json_type(res['exclude'])}")
            try:
                if res.get("config"):  # else no R maps hosts yet: the resource module's check says so
                    _targets(res["exclude"], "resource.exclude")
            except ConfigError:
                raise ConfigError(f"error decoding exclude set {res['exclude']}: invalid targets: "
                                  "Hostlist cannot be decoded") from None
    inst = _section(cfg, "instance", ("expiration",))
    if inst is not None and "expiration" in inst:
        _fsd(inst["expiration"], "instance.expiration")
    if "policy" in cfg:
        from flux_lite import queues

        queues.validate_policy(cfg["policy"], "policy")
    if "queues" in cfg or get_path(cfg, "policy.jobspec.defaults.system.queue") is not None:
        from flux_lite import queues

        queues.validate_queues(cfg)
    jm = _section(cfg, "job-manager", ("housekeeping", "update-duration", "inactive-age-limit",
                                        "inactive-num-limit"))
    if jm is not None:
        if "inactive-age-limit" in jm:
            age = jm["inactive-age-limit"]
            try:
                if not isinstance(age, str):
                    raise ConfigError("not a string")
                _fsd(age, "job-manager.inactive-age-limit")
            except ConfigError:
                raise ConfigError("job-manager.inactive-age-limit: invalid FSD") from None
        if "inactive-num-limit" in jm:
            num = jm["inactive-num-limit"]
            if isinstance(num, bool) or not isinstance(num, int):
                kinds = {str: "string", float: "real", list: "array", dict: "object", bool: "true"}
                raise ConfigError("job-manager.max-inactive-*: Expected integer, got "
                                  f"{kinds.get(type(num), 'null') if num is not False else 'false'}")
            if num < 0:
                raise ConfigError("job-manager.inactive-num-limit: must be >= 0")
        if "housekeeping" in jm:
            validate_housekeeping(jm["housekeeping"], imp=get_path(cfg, "exec.imp"))
        ud = _section(jm, "update-duration", ("owner-allow-any",), "job-manager.")
        if ud is not None and "owner-allow-any" in ud:
            _bool(ud["owner-allow-any"], "job-manager.update-duration.owner-allow-any")
    sch = _section(cfg, "sched", ("policy", "queue-depth", "reservation-depth", "partial-ok"))
    if sch is not None:
        if "policy" in sch:
            from flux_lite.sched import registry

            policies = registry.policies()
            if sch["policy"] not in policies:
                raise ConfigError(f"sched.policy: expected one of {', '.join(policies)}, got {sch['policy']!r}")
        if "queue-depth" in sch:
            _posint(sch["queue-depth"], "sched.queue-depth", allow_unlimited=True)
        if "reservation-depth" in sch:
            _posint(sch["reservation-depth"], "sched.reservation-depth")
        if "partial-ok" in sch:
            _bool(sch["partial-ok"], "sched.partial-ok")
    clk = _section(cfg, "clock", ("mode", "start"))
    if clk is not None:
        if "mode" in clk and clk["mode"] not in ("real", "virtual"):
            raise ConfigError(f"clock.mode: expected 'real' or 'virtual', got {clk['mode']!r}")
        if "start" in clk:
            start = clk["start"]
            if isinstance(start, bool) or not isinstance(start, (int, float)) or start <= 0:
                raise ConfigError("clock.start: expected seconds since the epoch (a positive number)")
    # Flux's job-exec keys: accepted, nothing to simulate with them
    ex = _section(cfg, "exec", ("imp", "service", "service-override", "job-shell", "sdexec-properties",
                                "max-start-delay-percent", "kill-timeout", "max-kill-count", "term-signal",
                                "kill-signal", "barrier-timeout", "testexec", "default-run-duration"))
    if ex is not None and "default-run-duration" in ex:
        _fsd(ex["default-run-duration"], "exec.default-run-duration")
    return cfg


def _idset_or_count(value, key):
    from flux_lite.formats.idset import IDset

    if isinstance(value, bool):
        raise ConfigError(f"{key}: expected an idset or a count")
    if isinstance(value, int):
        if value < 0:
            raise ConfigError(f"{key}: expected an idset or a count")
        return
    try:
        IDset.parse(str(value))
    except FormatError as exc:
        raise ConfigError(f"{key}: {exc}") from None


def _targets(value, key):
    """An idset or a hostlist (both are accepted wherever Flux takes TARGETS)."""
    from flux_lite.formats.hostlist import Hostlist
    from flux_lite.formats.idset import IDset

    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise ConfigError(f"{key}: expected an idset or hostlist string")
    try:
        IDset.parse(str(value))
        return
    except FormatError:
        pass
    try:
        Hostlist.parse(str(value))
    except FormatError:
        raise ConfigError(f"{key}: must be a valid idset or hostlist") from None


SIMULATION_KEYS = {"duration", "rank-durations", "fail-ranks", "drain-on-failure"}


def validate_housekeeping(hk, imp=None):
    prefix = "job-manager.housekeeping"
    if not isinstance(hk, dict):
        raise ConfigError(f"{prefix}: must be a table")
    # checked in the order of Flux's strict unpack of the table: the value
    # types of its keys, then keys left over, then release-after, then the
    # command (or the IMP it implies); the messages are jansson's and Flux's
    for key, want in (("release-after", str), ("use-systemd-unit", bool), ("exit-on-first-error", bool)):
        if key in hk and not isinstance(hk[key], want):
            expected = "string" if want is str else "true or false"
            raise ConfigError(f"{prefix}: Expected {expected}, got {_json_type(hk[key])}")
    unknown = [key for key in hk if key not in HOUSEKEEPING_KEYS]
    if unknown:
        raise ConfigError(f"{prefix}: {len(unknown)} object item(s) left unpacked: {', '.join(unknown)}")
    if "release-after" in hk:
        _fsd(hk["release-after"], f"{prefix}.release-after")
    if "command" in hk:
        cmd = hk["command"]
        if not isinstance(cmd, list) or not cmd or not all(isinstance(c, str) and c for c in cmd):
            raise ConfigError("error creating housekeeping command")
    elif imp is None and not SIMULATION_KEYS & set(hk):
        # without a command Flux runs housekeeping through the IMP; flux-lite's
        # simulation keys stand in for a command
        raise ConfigError(f"{prefix} implies IMP but exec.imp is undefined")
    if "duration" in hk:
        _fsd(hk["duration"], f"{prefix}.duration")
    if "rank-durations" in hk:
        rd = hk["rank-durations"]
        if not isinstance(rd, dict):
            raise ConfigError(f"{prefix}.rank-durations: must be a table of TARGETS: FSD")
        for target, dur in rd.items():
            _targets(target, f"{prefix}.rank-durations")
            _fsd(dur, f"{prefix}.rank-durations.{target}")
    if "fail-ranks" in hk:
        _targets(hk["fail-ranks"], f"{prefix}.fail-ranks")
    for key in ("exit-on-first-error", "use-systemd-unit", "drain-on-failure"):
        if key in hk:
            _bool(hk[key], f"{prefix}.{key}")
    return hk


def get_path(cfg, dotted, default=None):
    """Look up 'a.b.c' in a nested config dict."""
    obj = cfg
    for part in dotted.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return default
        obj = obj[part]
    return obj
