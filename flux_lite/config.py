"""Instance configuration: YAML whose tables mirror Flux's TOML ones.

Validation is strict: an unknown key or a bad value is refused with the key's
name, before anything is changed. The validated config is stored as JSON in
the KVS (key ``config``), so commands that do not read YAML never import it.
"""

import json

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

POLICIES = ("fcfs", "easy", "hybrid", "conservative")


def load_text(text, source="config"):
    """Parse YAML (or JSON) text into a dict, then validate it."""
    text = text.strip()
    if not text:
        return validate({})
    try:
        obj = json.loads(text)
    except ValueError:
        import yaml  # only commands that read YAML pay for it

        try:
            obj = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f": line {mark.line + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise ConfigError(f"{source}{where}: {problem}") from None
        except (ValueError, TypeError, OverflowError) as exc:
            # e.g. a date that does not exist (2026-02-30)
            raise ConfigError(f"{source}: {exc}") from None
        except RecursionError:
            raise ConfigError(f"{source}: nested too deeply") from None
        check_size(obj, source)
        obj = _plain(obj, source)
    if obj is None:
        obj = {}
    if not isinstance(obj, dict):
        raise ConfigError(f"{source}: top level must be a table")
    return validate(obj)


# bounds on what one input may cost: bytes read, and values after YAML
# alias expansion (563 bytes of aliases can name a billion strings)
MAX_INPUT = 1 << 20
MAX_VALUES = 100000


def _plain(obj, source):
    """YAML values as JSON can hold them: dates and times become their ISO
    text, so that the stored config never holds what JSON cannot."""
    import datetime

    if isinstance(obj, dict):
        return {str(k) if not isinstance(k, str) else k: _plain(v, source) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain(v, source) for v in obj]
    if isinstance(obj, (datetime.date, datetime.datetime)):
        return obj.isoformat()
    if isinstance(obj, bytes):
        raise ConfigError(f"{source}: binary values are not allowed")
    if isinstance(obj, (set, tuple)):
        return [_plain(v, source) for v in obj]
    return obj


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


def load_file(path):
    return load_text(read_input(path, "config"), source=str(path))


def _table(obj, key):
    if not isinstance(obj, dict):
        raise ConfigError(f"{key}: must be a table")
    return obj


def _unknown(obj, allowed, prefix):
    for key in obj:
        if key not in allowed:
            raise ConfigError(f"{prefix}: unknown key '{key}'")


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


def _bool(value, key):
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    return value


def validate(cfg):
    """Check every table flux-lite knows; return cfg unchanged when valid."""
    _unknown(cfg, ("resource", "instance", "policy", "queues", "job-manager", "sched", "clock", "exec"), "config")
    if "resource" in cfg:
        res = _table(cfg["resource"], "resource")
        _unknown(res, ("config", "exclude", "noverify", "norestrict"), "resource")
        if "config" in res:
            entries = res["config"]
            if not isinstance(entries, list) or not entries:
                raise ConfigError("resource.config: must be a non-empty list of tables")
            for i, ent in enumerate(entries):
                key = f"resource.config[{i}]"
                _table(ent, key)
                _unknown(ent, ("hosts", "cores", "gpus", "properties"), key)
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
            _targets(res["exclude"], "resource.exclude")
    if "instance" in cfg:
        inst = _table(cfg["instance"], "instance")
        _unknown(inst, ("expiration",), "instance")
        if "expiration" in inst:
            _fsd(inst["expiration"], "instance.expiration")
    if "policy" in cfg:
        pol = _table(cfg["policy"], "policy")
        if "limits" in pol:
            lim = _table(pol["limits"], "policy.limits")
            if "duration" in lim:
                _fsd(lim["duration"], "policy.limits.duration")
        from flux_lite import queues

        queues.validate_policy(pol, "policy")
    if "queues" in cfg or get_path(cfg, "policy.jobspec.defaults.system.queue") is not None:
        from flux_lite import queues

        queues.validate_queues(cfg)
    if "job-manager" in cfg:
        jm = _table(cfg["job-manager"], "job-manager")
        _unknown(jm, ("housekeeping", "update-duration", "inactive-age-limit", "inactive-num-limit"),
                 "job-manager")
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
            validate_housekeeping(jm["housekeeping"])
        if "update-duration" in jm:
            ud = _table(jm["update-duration"], "job-manager.update-duration")
            _unknown(ud, ("owner-allow-any",), "job-manager.update-duration")
            if "owner-allow-any" in ud:
                _bool(ud["owner-allow-any"], "job-manager.update-duration.owner-allow-any")
    if "sched" in cfg:
        sch = _table(cfg["sched"], "sched")
        _unknown(sch, ("policy", "queue-depth", "reservation-depth", "partial-ok"), "sched")
        if "policy" in sch and sch["policy"] not in POLICIES:
            raise ConfigError(f"sched.policy: expected one of {', '.join(POLICIES)}, got {sch['policy']!r}")
        if "queue-depth" in sch:
            _posint(sch["queue-depth"], "sched.queue-depth", allow_unlimited=True)
        if "reservation-depth" in sch:
            _posint(sch["reservation-depth"], "sched.reservation-depth")
        if "partial-ok" in sch:
            _bool(sch["partial-ok"], "sched.partial-ok")
    if "clock" in cfg:
        clk = _table(cfg["clock"], "clock")
        _unknown(clk, ("mode", "start"), "clock")
        if "mode" in clk and clk["mode"] not in ("real", "virtual"):
            raise ConfigError(f"clock.mode: expected 'real' or 'virtual', got {clk['mode']!r}")
        if "start" in clk:
            start = clk["start"]
            if isinstance(start, bool) or not isinstance(start, (int, float)) or start <= 0:
                raise ConfigError("clock.start: expected seconds since the epoch (a positive number)")
    if "exec" in cfg:
        ex = _table(cfg["exec"], "exec")
        _unknown(ex, ("imp",), "exec")
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


def validate_housekeeping(hk):
    prefix = "job-manager.housekeeping"
    if not isinstance(hk, dict):
        raise ConfigError(f"{prefix}: must be a table")
    for key in hk:
        if key not in HOUSEKEEPING_KEYS:
            # the wording of Flux's strict jansson unpack
            raise ConfigError(f"{prefix}: 1 object item(s) left unpacked: {key}")
    if "command" in hk:
        cmd = hk["command"]
        if not isinstance(cmd, list) or not cmd or not all(isinstance(c, str) and c for c in cmd):
            raise ConfigError("error creating housekeeping command")
    if "release-after" in hk:
        _fsd(hk["release-after"], f"{prefix}.release-after")
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
