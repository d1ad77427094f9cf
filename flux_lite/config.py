"""Instance configuration: Flux's TOML tables, read from TOML, YAML or JSON.

Validation is strict: an unknown key or a bad value is refused with the key's
name, before anything is changed. The validated config is stored as JSON in
the KVS (key ``config``), so commands that do not read YAML never import it.
"""

import datetime
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flux_lite.errors import ConfigError, FormatError
from flux_lite.formats import fsd
from flux_lite.formats import rset as rsetmod
from flux_lite.formats.bounds import count_values, flow_depth_exceeds
from flux_lite.formats.hostlist import Hostlist
from flux_lite.formats.idset import IDset

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


# Checks of values only a higher layer can judge, installed by that layer when
# it is imported: the scheduler registry (flux_lite/sched/registry.py) installs
# "sched.policy", whose values are the policies of the scheduler modules.
_VALUE_CHECKS: dict[str, Callable[[Any], None]] = {}


def register_check(dotted: str, check: Callable[[Any], None]) -> None:
    """Have validate() call check(value) for the key dotted; check raises ConfigError."""
    _VALUE_CHECKS[dotted] = check


# Tables of Flux's configuration that flux-lite has nothing to simulate with:
# an admin's conf.d may hold them, and they are accepted and ignored.
FLUX_ONLY_TABLES = (
    "access", "archive", "bootstrap", "broker", "content", "cron", "heartbeat", "ingest",
    "job-info", "kvs", "rexec", "sched-fluxion-feasibility", "sched-fluxion-qmanager", "sched-fluxion-resource",
    "systemd",
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

    return re.search(r"^\s*(\[\[?[^\]]+\]\]?\s*(#.*)?|[A-Za-z0-9_.\"'-]+\s*=.*)$", text, re.M) is not None


def parse_toml(text, source="config"):
    """TOML text -> dict (tomllib; tomli before Python 3.11). Errors name the line."""

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

    if count_values(obj, limit) > limit:
        raise ConfigError(f"{source}: more than {limit} values (YAML aliases expand to too much)")


def load_file(path, check=True):
    """A config file (TOML, YAML or JSON, by extension or content) or, as
    Flux reads a config directory, every DIR/*.toml merged in name order."""

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


def _validate_plugins(plugins):
    """[[job-manager.plugins]]: what the job manager unpacks of each entry
    (it loads them once, as it starts: see job_manager/jobtap.py)."""
    if not isinstance(plugins, list):
        raise ConfigError("[job-manager.plugins] config must be an array")
    for i, entry in enumerate(plugins):
        if not isinstance(entry, dict):
            raise ConfigError(f"[job-manager.plugins][{i}]: Expected object, got {rsetmod.jansson_type(entry)}")
        for key, kind in (("load", str), ("remove", str), ("conf", dict)):
            if key in entry and not isinstance(entry[key], kind):
                want = "string" if kind is str else "object"
                got = rsetmod.jansson_type(entry[key])
                raise ConfigError(f"[job-manager.plugins][{i}]: Expected {want}, got {got}")


def _section(parent, name, allowed, prefix=""):
    """The table parent[name], checked (None when absent)."""
    if name not in parent:
        return None
    return _checked(parent[name], prefix + name, allowed)


def _fsd(value, key, c_syntax=True):

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


def _bool(value, key):
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    return value


def validate(cfg):
    """Check every table flux-lite knows; return cfg unchanged when valid."""
    _unknown(cfg, ("resource", "instance", "policy", "queues", "job-manager", "sched", "clock", "exec",
                   "fake-resources") + FLUX_ONLY_TABLES, "config")
    fake = _section(cfg, "fake-resources", ("nnodes", "cores-per-node", "gpus-per-node", "host-prefix",
                                            "hwloc-xml-path", "amend-r"))
    if fake is not None:
        validate_fake_resources(fake)
    res = _section(cfg, "resource", ("config", "exclude", "noverify", "norestrict", "path", "scheduling", "verify",
                                     "no-update-watch", "rediscover", "journal-max", "history"))
    if res is not None:
        _resource_options(res)
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
                                  f"Expected string, got {rsetmod.jansson_type(res['exclude'])}")
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
        validate_policy(cfg["policy"], "policy")
    if "queues" in cfg or get_path(cfg, "policy.jobspec.defaults.system.queue") is not None:
        validate_queues(cfg)
    jm = _section(cfg, "job-manager", ("housekeeping", "update-duration", "inactive-age-limit",
                                        "inactive-num-limit", "prolog", "epilog", "perilog",
                                        "plugins"))
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
        if "plugins" in jm:
            _validate_plugins(jm["plugins"])
        if "housekeeping" in jm:
            validate_housekeeping(jm["housekeeping"], imp=get_path(cfg, "exec.imp"))
        ud = _section(jm, "update-duration", ("owner-allow-any",), "job-manager.")
        if ud is not None and "owner-allow-any" in ud:
            _bool(ud["owner-allow-any"], "job-manager.update-duration.owner-allow-any")
    sch = _section(cfg, "sched", ("policy", "queue-depth", "reservation-depth", "partial-ok", "module",
                                  "module-args"))
    if sch is not None:
        if "module" in sch and not (isinstance(sch["module"], str) and sch["module"].endswith(".py")):
            raise ConfigError(f"sched.module: expected the path of a Python module file (.py), got {sch['module']!r}")
        if "module-args" in sch and not (isinstance(sch["module-args"], list)
                                         and all(isinstance(a, str) for a in sch["module-args"])):
            raise ConfigError("sched.module-args: expected a list of strings")
        if "policy" in sch:
            check = _VALUE_CHECKS.get("sched.policy")
            if check is not None:
                check(sch["policy"])
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


def _resource_options(res):
    """The [resource] keys besides config and exclude, with the resource
    module's words (its unpack of the table, librlist's verify checks)."""
    kinds = {"path": (str,), "scheduling": (str,), "history": (str,), "journal-max": (int,),
             "noverify": (bool,), "norestrict": (bool,), "no-update-watch": (bool,), "rediscover": (bool,)}
    for key, kind in kinds.items():
        if key not in res:
            continue
        value = res[key]
        if not isinstance(value, kind) or (kind == (int,) and isinstance(value, bool)):
            want = {str: "string", int: "integer", bool: "true or false"}[kind[0]]
            got = rsetmod.jansson_type(value)
            raise ConfigError(f"error parsing [resource] configuration: Expected {want}, got {got}")
    if "history" in res:
        try:
            fsd.parse_config(res["history"])
        except (ValueError, FormatError):
            raise ConfigError("invalid history time") from None
    if "verify" in res:
        try:
            rsetmod.verify_modes(res["verify"])
        except FormatError as exc:
            raise ConfigError(str(exc)) from None


def _idset_or_count(value, key):

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


def validate_fake_resources(fake):
    """[fake-resources] (flux-config-fake-resources(5)): nnodes is required,
    as Flux's rc1 task words it; the counts are integers, the rest strings."""
    if "nnodes" not in fake:
        raise ConfigError("[fake-resources] table requires the 'nnodes' key")
    _posint(fake["nnodes"], "fake-resources.nnodes")
    if "cores-per-node" in fake:
        _posint(fake["cores-per-node"], "fake-resources.cores-per-node")
    gpus = fake.get("gpus-per-node", 0)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
        raise ConfigError(f"fake-resources.gpus-per-node: expected a non-negative integer, got {gpus!r}")
    for key in ("host-prefix", "hwloc-xml-path", "amend-r"):
        if key in fake and (not isinstance(fake[key], str) or not fake[key]):
            raise ConfigError(f"fake-resources.{key}: expected a non-empty string, got {fake[key]!r}")


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
            raise ConfigError(f"{prefix}: Expected {expected}, got {rsetmod.jansson_type(hk[key])}")
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


# -- queues (RFC 33): their configuration ------------------------------------------
# The runtime side (enable/start state, submission checks) is the job manager's:
# flux_lite/job_manager/queues.py.


class QueueDef:
    """One configured queue."""

    __slots__ = ("name", "requires", "parent", "policy")

    def __init__(self, name, requires=None, parent=None, policy=None):
        self.name = name
        self.requires = requires
        self.parent = parent
        self.policy = policy or {}


class QueueConfig:
    """The queues of a config: definitions in config order and the default."""

    def __init__(self, cfg):
        self.defs = {}
        for name, table in (cfg.get("queues") or {}).items():
            self.defs[name] = QueueDef(name, table.get("requires"), table.get("parent"), table.get("policy"))
        self.default = get_path(cfg, "policy.jobspec.defaults.system.queue")
        self.global_policy = cfg.get("policy") or {}

    @property
    def named(self) -> bool:
        return bool(self.defs)

    def names(self):
        return list(self.defs)

    def resource_def(self, name):
        """The queue whose resources name uses: itself, or a virtual queue's parent."""
        q = self.defs[name]
        return self.defs.get(q.parent, q) if q.parent else q

    def requires(self, name):
        """Properties a job of queue name must have (a virtual queue inherits)."""
        return self.resource_def(name).requires

    def policy_value(self, name, dotted):
        """A policy key for queue name: the queue's own, else the global one."""
        q = self.defs.get(name) if name is not None else None
        while q is not None:
            # a virtual queue's own keys, then its parent's, then the general table
            value = get_path(q.policy, dotted)
            if value is not None:
                return value
            q = self.defs.get(q.parent) if q.parent else None
        return get_path(self.global_policy, dotted)

    def hash_order(self):
        """Queue names in the order Flux's job manager walks its queue hash
        (czmq zhashx: modified Bernstein hash, prime-sized table, new items at
        the head of their chain). `queue status` and the enable/start replies
        list queues in this order; `queue list` uses config order."""
        return zhashx_order(self.names())


_CONFIG_CACHE = {}


def queue_config(cfg) -> QueueConfig:
    hit = _CONFIG_CACHE.get(id(cfg))
    if hit is not None and hit[0] is cfg:
        return hit[1]
    qc = QueueConfig(cfg)
    _CONFIG_CACHE.clear()
    _CONFIG_CACHE[id(cfg)] = (cfg, qc)
    return qc


_PRIMES = (3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 43, 47, 53, 59, 61, 103, 107, 109, 113, 127,
           229, 233, 239, 241, 251, 487, 491, 499, 503, 509, 997, 1009, 1013, 1019, 1021)


def _bernstein(key):
    h = 0
    for c in key.encode():
        h = ((33 * h) ^ (c - 256 if c > 127 else c)) & 0xFFFFFFFFFFFFFFFF
    return h


def zhashx_order(names):
    """Iteration order of a czmq zhashx after inserting names in order."""
    prime = 0
    chain_limit = 1
    table = [[] for _ in range(_PRIMES[0])]
    size = 0

    def rehash(new_prime):
        new = [[] for _ in range(_PRIMES[new_prime])]
        for bucket in table:
            for key in bucket:
                new[_bernstein(key) % _PRIMES[new_prime]].insert(0, key)
        return new

    for name in names:
        if size >= _PRIMES[prime] * 75 // 100 and prime + 5 < len(_PRIMES):
            prime += 5
            table = rehash(prime)
            chain_limit += 1
        index = _bernstein(name) % _PRIMES[prime]
        if name in table[index]:
            continue
        if len(table[index]) > chain_limit and prime + 5 < len(_PRIMES):
            prime += 5
            table = rehash(prime)
            index = _bernstein(name) % _PRIMES[prime]
        table[index].insert(0, name)
        size += 1
    return [key for bucket in table for key in bucket]


def _table_error(where, msg):
    return ConfigError(f"error parsing [{where}] config table: {msg}")


def _unpack(where, table, allowed):
    """jansson's ``{s?o ... !}``: an object holding only the allowed keys."""
    if not isinstance(table, dict):
        raise _table_error(where, f"Expected object, got {rsetmod.jansson_type(table)}")
    extra = [k for k in table if k not in allowed]
    if extra:
        raise _table_error(where, f"{len(extra)} object item(s) left unpacked: {', '.join(extra)}")


def _is_fsd(value):
    if not isinstance(value, str):  # Flux wants an FSD string, not a number
        return False
    try:
        fsd.parse_config(value)
    except ValueError:
        return False
    return True


def _is_string_array(value, banned=""):
    return isinstance(value, list) and all(
        isinstance(v, str) and not (set(v) & set(banned)) for v in value)


# characters Flux refuses in a queue's required property names
_BANNED_PROPERTY_CHARS = " \t!&'\"`|()"


def _validate_job_size(where, size):
    _unpack(where, size, ("nnodes", "ncores", "ngpus"))
    for key in ("nnodes", "ncores", "ngpus"):  # jansson checks keys in format order
        if key in size and (isinstance(size[key], bool) or not isinstance(size[key], int)):
            raise _table_error(where, f"Expected integer, got {rsetmod.jansson_type(size[key])}")
    if any(v < -1 for v in size.values()):
        raise _table_error(where, "values must be >= -1")


def validate_policy(policy, where):
    """A [policy] table (global or per queue), as Flux's conf_policy checks
    it: jobspec defaults, limits, access and the scheduler table. Returns the
    default queue it names, if any."""
    _unpack(where, policy, ("jobspec", "limits", "access", "scheduler"))
    default_queue = None
    if "jobspec" in policy:
        jw = f"{where}.jobspec"
        jobspec = policy["jobspec"]
        _unpack(jw, jobspec, ("defaults",))
        if "defaults" in jobspec:
            _unpack(jw, jobspec["defaults"], ("system",))
            system = jobspec["defaults"].get("system", {})
            _unpack(jw, system, ("duration", "queue"))
            if "duration" in system and not _is_fsd(system["duration"]):
                raise _table_error(jw, "'defaults.system.duration' is not a valid FSD")
            if "queue" in system:
                if not isinstance(system["queue"], str):
                    raise _table_error(jw, "'defaults.system.queue' is not a string")
                default_queue = system["queue"]
    if "limits" in policy:
        lw = f"{where}.limits"
        limits = policy["limits"]
        _unpack(lw, limits, ("job-size", "duration"))
        if "duration" in limits and not _is_fsd(limits["duration"]):
            raise _table_error(lw, "'duration' is not a valid FSD")
        if "job-size" in limits:
            size = limits["job-size"]
            _unpack(f"{lw}.job-size", size, ("min", "max"))
            # Flux names these tables [...limits.min] / [...limits.max]
            for bound in ("min", "max"):
                if bound in size:
                    _validate_job_size(f"{lw}.{bound}", size[bound])
    if "access" in policy:
        aw = f"{where}.access"
        access = policy["access"]
        _unpack(aw, access, ("allow-user", "allow-group"))
        for key in ("allow-user", "allow-group"):
            if key in access and not _is_string_array(access[key]):
                raise _table_error(aw, f"'{key}' must be a string array")
    return default_queue


def validate_queues(cfg):
    """Check [queues] and the default queue, with Flux's messages and in
    Flux's order: each entry's syntax first, then parent relationships."""
    queues = cfg.get("queues")
    if queues is not None:
        if not isinstance(queues, dict):
            raise ConfigError("error parsing [queues] config table: not a table")
        for name, table in queues.items():
            where = f"queues.{name}"
            _unpack(where, table, ("policy", "requires", "parent"))
            parent = table.get("parent")
            if "parent" in table and not isinstance(parent, str):
                raise _table_error(where, "'parent' must be a string")
            if "policy" in table:
                if validate_policy(table["policy"], f"{where}.policy") is not None:
                    raise _table_error(where, "'policy' must not define a default queue!")
                if parent is not None and "scheduler" in table["policy"]:
                    raise _table_error(where, "a virtual queue must not set 'policy.scheduler'")
            if "requires" in table:
                if parent is not None:
                    raise _table_error(where, "a virtual queue must not set 'requires'")
                if not _is_string_array(table["requires"], _BANNED_PROPERTY_CHARS):
                    raise _table_error(where, "'requires' must be an array of property strings (RFC 20)")
        for name, table in queues.items():
            parent = table.get("parent")
            if parent is None:
                continue
            where = f"queues.{name}"
            if parent == name:
                raise _table_error(where, "parent queue is itself")
            if parent not in queues:
                raise _table_error(where, f"parent queue '{parent}' is not configured")
            if isinstance(queues[parent], dict) and isinstance(queues[parent].get("parent"), str):
                # inheritance is one level deep (RFC 33)
                raise _table_error(where, f"parent queue '{parent}' is itself a virtual queue")
    default = get_path(cfg, "policy.jobspec.defaults.system.queue")
    if isinstance(default, str) and (not queues or default not in queues):
        raise ConfigError(f"the [policy] config table defines a default queue {default} "
                          "that is not in [queues] table")


# -- state --------------------------------------------------------------------------


def queue_of(jobspec):
    """attributes.system.queue of a jobspec, or None."""
    try:
        name = jobspec["attributes"]["system"].get("queue")
    except (KeyError, TypeError, AttributeError):
        return None
    return name if isinstance(name, str) else None


def with_virtual(cfg, names):
    """names plus the virtual queues whose parent is among them (`jobs -q`)."""
    qc = queue_config(cfg)
    out = set(names)
    out |= {q.name for q in qc.defs.values() if q.parent in out}
    return out


def queues_of_ranks(cfg, rset):
    """name -> IDset of the ranks each queue may use (requires all its properties)."""
    qc = queue_config(cfg)
    out = {}
    for name in qc.names():
        req = qc.requires(name)
        ranks = rset.ranks
        for prop in req or ():
            ranks = ranks & rset.ranks_with_property(prop)
        out[name] = ranks
    return out
