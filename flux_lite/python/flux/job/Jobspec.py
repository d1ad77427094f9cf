"""flux.job.Jobspec: Flux's Jobspec and JobspecV1 over flux-lite's jobspec values.

The jobspec is the dict in ``.jobspec``; building (``from_command``),
validation (with Flux's messages), loading and dumping are
flux_lite.formats.jobspec / jobspec_validate, the option values of
``apply_options`` flux_lite.formats.submitopts. This module gives them Flux's
classes, names and exceptions (ValueError, TypeError, OSError(EINVAL)).
"""

from __future__ import annotations

import collections
import errno
import json
import os
from collections.abc import Iterator, Mapping
from types import SimpleNamespace
from typing import Any

from flux.cli.plugin import CLIPluginRegistry
from flux.job._ffi import is_null
from flux.job._utils import BatchConfig
from flux_lite.errors import FluxLiteError
from flux_lite.formats import constraint as _constraint
from flux_lite.formats import jobopts
from flux_lite.formats import jobspec as _jobspec
from flux_lite.formats import jobspec_validate as _validate
from flux_lite.formats import submitopts as _opts


def _plain(exc: Exception) -> Exception:
    """The library's error as the builtin Flux raises (TypeError or ValueError)."""
    return TypeError(str(exc)) if isinstance(exc, TypeError) else ValueError(str(exc))


def _check(check: Any, js: dict) -> None:
    try:
        check(js)
    except FluxLiteError as exc:
        raise _plain(exc) from None


def _convert_jobspec_arg_to_string(jobspec: Any) -> str | bytes:
    """JSON text of a Jobspec, str or bytes (Flux's name: the submit API takes the same)."""
    if isinstance(jobspec, Jobspec):
        return jobspec.dumps()
    if isinstance(jobspec, (str, bytes)):
        return jobspec
    if jobspec is None or is_null(jobspec):
        raise OSError(errno.EINVAL, "jobspec must not be None/NULL")
    raise TypeError("jobspec must be a Jobspec or string (either binary or unicode)")


def validate_jobspec(jobspec: Any, require_version: int | None = None) -> tuple[bool, Jobspec]:
    """(True, the Jobspec object) if ``jobspec`` (a Jobspec or JSON text) is
    valid; else the ValueError/TypeError Flux raises. Version 1 (or
    require_version=1) is checked as JobspecV1."""
    obj = json.loads(_convert_jobspec_arg_to_string(jobspec))
    cls = JobspecV1 if require_version == 1 or (isinstance(obj, dict) and obj.get("version") == 1) else Jobspec
    return True, cls._of_dict(obj)


class Jobspec:
    """A canonical jobspec (RFC 14): ``.jobspec`` is the dict, checked when made."""

    top_level_keys = {"resources", "tasks", "version", "attributes"}

    def __init__(self, resources: Any, tasks: Any, attributes: Any, version: Any) -> None:
        self.jobspec = {"resources": resources, "tasks": tasks, "attributes": attributes, "version": version}
        _check(self._checker(), self.jobspec)

    @staticmethod
    def _checker() -> Any:
        return _validate.canonical

    @classmethod
    def _of_dict(cls, obj: Any) -> Jobspec:
        if not isinstance(obj, dict) or set(obj) != cls.top_level_keys:
            _check(_validate.canonical, obj)  # Missing/Extraneous key, as Flux words it
        return cls(**obj)

    @classmethod
    def from_yaml_stream(cls, yaml_stream: Any) -> Jobspec:
        """A jobspec from YAML (or JSON) text or a file-like object."""
        text = yaml_stream.read() if hasattr(yaml_stream, "read") else yaml_stream
        try:
            obj = _jobspec.loads(text, check=False)
        except FluxLiteError as exc:
            raise _plain(exc) from None
        return cls._of_dict(obj)

    @classmethod
    def from_yaml_file(cls, filename: str | os.PathLike) -> Jobspec:
        """A jobspec from a YAML (or JSON) file."""
        with open(filename, "rb") as f:
            return cls.from_yaml_stream(f)

    # -- attributes ---------------------------------------------------------------------------------------

    def getattr(self, key: str) -> Any:
        """The attribute at a dotted key (``system.`` implied); KeyError if absent."""
        return _jobspec.get_attr(self.jobspec, key)

    def setattr(self, key: str, val: Any) -> None:
        """Set the attribute at a dotted key (``system.`` implied)."""
        key = _jobspec.attr_key(key)
        try:
            _jobspec.set_treedict(self.jobspec, key, val)
        except TypeError as exc:
            raise TypeError(f"failed to set {key} to {val}: {exc}") from None

    def setattr_shell_option(self, key: str, val: Any) -> None:
        """Set ``attributes.system.shell.options.KEY``."""
        self.setattr("system.shell.options." + key, val)

    def _system(self, key: str) -> Any:
        try:
            return self.jobspec["attributes"]["system"][key]
        except (KeyError, TypeError):
            return None

    @property
    def duration(self) -> Any:
        """The time limit in seconds (0: none); set from seconds, FSD or a timedelta."""
        return self._system("duration")

    @duration.setter
    def duration(self, duration: Any) -> None:
        try:
            seconds = _jobspec.duration_seconds(duration)
        except FluxLiteError as exc:
            raise _plain(exc) from None
        self.setattr("system.duration", seconds)

    @property
    def queue(self) -> Any:
        return self._system("queue")

    @queue.setter
    def queue(self, queue: str) -> None:
        if not isinstance(queue, str):
            raise TypeError("queue must be a string")
        self.setattr("system.queue", queue)

    @property
    def cwd(self) -> Any:
        return self._system("cwd")

    @cwd.setter
    def cwd(self, cwd: str | os.PathLike) -> None:
        if isinstance(cwd, os.PathLike):
            cwd = os.fspath(cwd)
        if not isinstance(cwd, str):
            raise ValueError("cwd must be a string")
        self.setattr("system.cwd", cwd)

    @property
    def environment(self) -> Any:
        return self._system("environment")

    @environment.setter
    def environment(self, environ: Mapping) -> None:
        if not isinstance(environ, Mapping):
            raise ValueError("environment must be a mapping")
        self.setattr("system.environment", environ)

    def _io_path(self, iotype: str, stream: str) -> Any:
        try:
            return self.jobspec["attributes"]["system"]["shell"]["options"][iotype][stream]["path"]
        except (KeyError, TypeError):
            return None

    def _set_io_path(self, iotype: str, stream: str, path: Any) -> None:
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        if not isinstance(path, str):
            raise TypeError(f"The path must be a string or pathlib object, got {type(path).__name__}")
        self.setattr_shell_option(f"{iotype}.{stream}.type", "file")
        self.setattr_shell_option(f"{iotype}.{stream}.path", path)

    @property
    def input(self) -> Any:
        return self._io_path("input", "stdin")

    @input.setter
    def input(self, path: Any) -> None:
        self._set_io_path("input", "stdin", path)

    @property
    def output(self) -> Any:
        return self._io_path("output", "stdout")

    @output.setter
    def output(self, path: Any) -> None:
        self._set_io_path("output", "stdout", path)

    @property
    def error(self) -> Any:
        return self._io_path("output", "stderr")

    @error.setter
    def error(self, path: Any) -> None:
        self._set_io_path("output", "stderr", path)

    stdin = input
    stdout = output
    stderr = error

    _UNBUFFERED = (("output.stdout.buffer.type", "none"), ("output.stderr.buffer.type", "none"),
                   ("output.batch-timeout", 0.05), ("input.batch-timeout", 0.0))

    @property
    def unbuffered(self) -> bool:
        """True when stdout and stderr are unbuffered."""
        try:
            return (self.getattr("shell.options.output.stdout.buffer.type") == "none"
                    and self.getattr("shell.options.output.stderr.buffer.type") == "none")
        except KeyError:
            return False

    @unbuffered.setter
    def unbuffered(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise TypeError("unbuffered must be True or False")
        if value:
            for key, val in self._UNBUFFERED:
                self.setattr_shell_option(key, val)
            return
        attrs = self.jobspec["attributes"]
        for stream in ("stdout", "stderr"):
            _jobspec.del_treedict(attrs, f"system.shell.options.output.{stream}.buffer")
        # a batch timeout is dropped only if it is still what `unbuffered` set
        for key, val in self._UNBUFFERED[2:]:
            try:
                if self.getattr("shell.options." + key) == val:
                    _jobspec.del_treedict(attrs, "system.shell.options." + key)
            except KeyError:
                pass

    def add_file(self, path: str, data: Any, perms: int | None = None, encoding: str | None = None) -> None:
        """Add an RFC 37 file: ``data`` is a mapping (JSON content), text (with a
        newline or an encoding given) or the path of a local file to read."""
        if not isinstance(data, (Mapping, str)):
            raise TypeError("data must be a Mapping or string")
        if encoding is None and isinstance(data, str) and "\n" in data:
            encoding = "utf-8"
        system = self.jobspec["attributes"]["system"]
        files = system.get("files", {})
        files[path] = _opts.file_entry(dict(data) if isinstance(data, Mapping) else data, perms, encoding)
        system["files"] = files

    def dumps(self, **kwargs: Any) -> str:
        """The jobspec as JSON text (json.dumps keyword arguments accepted)."""
        return _jobspec.dumps(self.jobspec, **kwargs)

    # -- sections and resources ---------------------------------------------------------------------------

    @property
    def resources(self) -> Any:
        return self.jobspec.get("resources")

    @property
    def tasks(self) -> Any:
        return self.jobspec.get("tasks")

    @property
    def attributes(self) -> Any:
        return self.jobspec.get("attributes")

    @property
    def version(self) -> Any:
        return self.jobspec.get("version")

    def __iter__(self) -> Iterator[dict]:
        """Every resource, depth first, parents before children."""
        return (res for _, res, _ in self.resource_walk())

    def resource_walk(self) -> Iterator[tuple[Any, dict, int]]:
        """(parent, resource, count) depth first; count multiplies the counts above."""

        def walk(level: list, parent: Any, factor: int) -> Iterator[tuple[Any, dict, int]]:
            for res in level:
                count = factor * res["count"]
                yield parent, res, count
                yield from walk(res.get("with", []), res, count)

        return walk(self.resources, None, 1)

    def resource_counts(self) -> collections.defaultdict:
        """Total count of each resource type (units ignored)."""
        counts: collections.defaultdict = collections.defaultdict(int)
        for _, res, count in self.resource_walk():
            counts[res["type"]] += count
        return counts

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.resources}, {self.tasks}, "
                f"attributes={self.attributes}, version={self.version})")

    def __str__(self) -> str:
        return str(self.jobspec)


class JobspecV1(Jobspec):
    """A version 1 jobspec (RFC 25), and the builders Flux's commands use."""

    def __init__(self, resources: Any, tasks: Any, attributes: Any, version: Any = 1) -> None:
        if version != 1:
            raise ValueError("version must be 1")
        super().__init__(resources, tasks, attributes, version)

    @staticmethod
    def _checker() -> Any:
        return _validate.validate

    def _set_extra_options(self, duration: Any = None, environment: Any = None, env_expand: Any = None,
                           cwd: Any = None, rlimits: Any = None, name: Any = None, input: Any = None,
                           output: Any = None, error: Any = None, label_io: bool = False,
                           unbuffered: bool = False, queue: Any = None, bank: Any = None) -> JobspecV1:
        # (Flux's order: it decides the order of the keys in the JSON)
        if duration is not None:
            self.duration = duration
        self.environment = dict(os.environ) if environment is None else environment
        if env_expand is not None:
            if not isinstance(env_expand, Mapping):
                raise ValueError("env_expand must be a mapping")
            self.setattr_shell_option("env-expand", env_expand)
        if cwd is not None:
            self.cwd = cwd
        if rlimits is not None:
            if not isinstance(rlimits, Mapping):
                raise ValueError("rlimits must be a mapping")
            self.setattr_shell_option("rlimit", rlimits)
        if name is not None:
            self.setattr("job.name", name)
        if input is not None:
            self.input = input
        for path, stream in ((output, "stdout"), (error, "stderr")):
            if path is not None and path not in ("none", "kvs"):
                self._set_io_path("output", stream, path)
                if label_io:
                    self.setattr_shell_option(f"output.{stream}.label", True)
        if unbuffered:
            self.unbuffered = True
        if queue is not None:
            self.setattr("queue", queue)
        if bank is not None:
            self.setattr("bank", bank)
        return self

    @classmethod
    def per_resource(cls, command: Any, ncores: int | None = None, nnodes: int | None = None,
                     per_resource_type: str | None = None, per_resource_count: int | None = None,
                     gpus_per_node: int | None = None, exclusive: bool = False, **kwargs: Any) -> JobspecV1:
        """A jobspec of ``ncores`` cores and/or ``nnodes`` nodes whose tasks are
        placed by the shell: ``per_resource_count`` tasks per ``per_resource_type``
        (node or core); other keywords as from_command."""
        if (per_resource_type is None) != (per_resource_count is None):
            missing = "per_resource_count" if per_resource_count is None else "per_resource_type"
            given = "per_resource_type" if per_resource_count is None else "per_resource_count"
            raise ValueError(f"must specify a {missing} with {given}")
        if per_resource_type is not None:
            if not isinstance(per_resource_type, str):
                raise ValueError("per_resource_type must be a string")
            if per_resource_type not in ("node", "core"):
                raise ValueError(f"Invalid per_resource_type='{per_resource_type}' specified")
            if not isinstance(per_resource_count, int):
                raise ValueError("per_resource_count must be an integer")
            if per_resource_count < 1:
                raise ValueError("per_resource_count must be >= 1")
        js = jobopts.per_resource([], ncores, nnodes, per_resource_type, per_resource_count, gpus_per_node,
                                  exclusive)
        js["tasks"][0]["command"] = command  # checked by the constructor, as Flux checks it
        return cls(js["resources"], js["tasks"], js["attributes"])._set_extra_options(**kwargs)

    @classmethod
    def from_command(cls, command: Any, num_tasks: int = 1, cores_per_task: int = 1,
                     gpus_per_task: int | None = None, num_nodes: int | None = None, exclusive: bool = False,
                     **kwargs: Any) -> JobspecV1:
        """The jobspec ``flux submit`` makes for ``command`` (tasks, cores and
        GPUs per task, nodes); other keywords: duration, environment (default:
        this process's), env_expand, cwd, rlimits, name, input, output, error,
        label_io, unbuffered, queue, bank."""
        # (the CLI's builder reads 0 as "not given": Flux's API refuses it)
        if not isinstance(num_tasks, int) or num_tasks < 1:
            raise ValueError("task count must be a integer >= 1")
        if not isinstance(cores_per_task, int) or cores_per_task < 1:
            raise ValueError("cores per task must be an integer >= 1")
        try:
            js = _jobspec.build(command, ntasks=num_tasks, nnodes=num_nodes, cores_per_task=cores_per_task,
                                gpus_per_task=gpus_per_task, exclusive=exclusive, check=False)
        except FluxLiteError as exc:
            raise _plain(exc) from None
        return cls(**js)._set_extra_options(**kwargs)

    @classmethod
    def from_nest_command(cls, command: Any, num_slots: int = 1, cores_per_slot: int = 1,
                          gpus_per_slot: int | None = None, num_nodes: int | None = None,
                          broker_opts: Any = None, exclusive: bool = False, conf: Any = None,
                          **kwargs: Any) -> JobspecV1:
        """A jobspec for a Flux instance whose initial program is ``command``;
        ``conf`` (a dict) becomes the child brokers' conf.json."""
        opts = list(broker_opts) if broker_opts is not None else []
        if conf is not None:
            opts.append("-c{{tmpdir}}/conf.json")
        js = cls.from_command(["flux", "broker", *opts, *command], num_tasks=num_slots,
                              cores_per_task=cores_per_slot, gpus_per_task=gpus_per_slot, num_nodes=num_nodes,
                              exclusive=exclusive, **kwargs)
        js.setattr_shell_option("per-resource.type", "node")
        js.setattr_shell_option("mpi", "none")
        js.setattr_shell_option("exit-timeout", "none")
        if conf is not None:
            js.add_file("conf.json", conf)
        return js

    @classmethod
    def from_batch_command(cls, script: str, jobname: str, args: Any = None, num_slots: int = 1,
                           cores_per_slot: int = 1, gpus_per_slot: int | None = None,
                           num_nodes: int | None = None, broker_opts: Any = None, exclusive: bool = False,
                           conf: Any = None, **kwargs: Any) -> JobspecV1:
        """A jobspec for a Flux instance running ``script`` (text starting with ``#!``)."""
        if not script.startswith("#!"):
            raise ValueError(f"{jobname} does not appear to start with '#!'")
        js = cls.from_nest_command(["{{tmpdir}}/script", *(args or ())], num_slots=num_slots,
                                   cores_per_slot=cores_per_slot, gpus_per_slot=gpus_per_slot,
                                   num_nodes=num_nodes, broker_opts=broker_opts, exclusive=exclusive, conf=conf,
                                   name=jobname, **kwargs)
        js.add_file("script", script, perms=0o700, encoding="utf-8")
        return js

    @classmethod
    def from_submit(cls, command: Any, *, ntasks: int = 1, nodes: int | None = None, cores_per_task: int = 1,
                    gpus_per_task: int | None = None, exclusive: bool = False, name: Any = None,
                    queue: Any = None, bank: Any = None, cwd: Any = None, output: Any = None, error: Any = None,
                    input: Any = None, label_io: bool = False, unbuffered: bool = False,
                    **kwargs: Any) -> JobspecV1:
        """``from_command`` then ``apply_options(prog="submit", **kwargs)``."""
        js = cls.from_command(command, num_tasks=ntasks, cores_per_task=cores_per_task,
                              gpus_per_task=gpus_per_task, num_nodes=nodes, exclusive=exclusive, name=name,
                              queue=queue, bank=bank, cwd=cwd, output=output, error=error, input=input,
                              label_io=label_io, unbuffered=unbuffered)
        return js._apply_with_defaults("submit", kwargs)

    def _apply_with_defaults(self, prog: str, kwargs: dict) -> JobspecV1:
        # env and rlimit as the command line gives them: propagated even when no rule is given
        kwargs.setdefault("env", [])
        kwargs.setdefault("rlimit", [])
        return self.apply_options(prog=prog, **kwargs)

    @classmethod
    def from_alloc(cls, *, nslots: int | None = None, nodes: int | None = None, cores_per_slot: int = 1,
                   gpus_per_slot: int | None = None, exclusive: bool = False, broker_opts: Any = None,
                   conf: Any = None, bg: bool = False, cwd: Any = None, **kwargs: Any) -> JobspecV1:
        """A jobspec as ``flux alloc`` makes it (nslots, or nodes: exclusive), then
        ``apply_options(prog="alloc")``; ``bg`` starts the instance without an initial program."""
        if nslots is None:
            if nodes is None:
                raise ValueError("from_alloc() requires nslots or nodes")
            nslots, exclusive = nodes, True
        opts = list(broker_opts or [])
        if bg:
            opts.append("-Sbroker.rc2_none=1")
        builder = {k: kwargs.pop(k) for k in _BUILDER_KEYS if k in kwargs}
        js = cls.from_nest_command([], num_slots=nslots, cores_per_slot=cores_per_slot, gpus_per_slot=gpus_per_slot,
                                   num_nodes=nodes, broker_opts=opts, exclusive=exclusive,
                                   conf=normalize_conf(conf), cwd=os.getcwd() if cwd is None else cwd, **builder)
        if bg:
            js.setattr_shell_option("pty.capture", 1)
        return js._apply_with_defaults("alloc", kwargs)

    @classmethod
    def from_batch(cls, script: Any = None, *, content: str | None = None, nslots: int | None = None,
                   nodes: int | None = None, cores_per_slot: int = 1, gpus_per_slot: int | None = None,
                   exclusive: bool = False, broker_opts: Any = None, conf: Any = None, wrap: bool = False,
                   name: Any = None, cwd: Any = None, output: Any = None, **kwargs: Any) -> JobspecV1:
        """A jobspec as ``flux batch`` makes it from a script file or ``content``,
        then ``apply_options(prog="batch")``; output defaults to ``flux-{{id}}.out``."""
        if script is not None and content is not None:
            raise TypeError("from_batch() accepts 'script' or 'content', not both")
        if script is None and content is None:
            raise TypeError("from_batch() requires 'script' (file path) or 'content' (inline script)")
        if content is None:
            import pathlib

            path = pathlib.Path(script)
            name = path.name if name is None else name
            content = path.read_text(encoding="utf-8")
        if wrap and not content.startswith("#!"):
            content = "#!/bin/sh\n" + content
        if nslots is None:
            nslots, exclusive = (nodes, True) if nodes is not None else (1, exclusive)
        builder = {k: kwargs.pop(k) for k in _BUILDER_KEYS if k in kwargs}
        js = cls.from_batch_command(content, "batch" if name is None else name, num_slots=nslots,
                                    cores_per_slot=cores_per_slot, gpus_per_slot=gpus_per_slot, num_nodes=nodes,
                                    broker_opts=broker_opts, exclusive=exclusive, conf=normalize_conf(conf),
                                    cwd=os.getcwd() if cwd is None else cwd,
                                    output="flux-{{id}}.out" if output is None else output, **builder)
        return js._apply_with_defaults("batch", kwargs)

    # -- options --------------------------------------------------------------------------------------------

    def apply_options(self, args: Any = None, *, prog: str | None = None, _preinit: bool = True, env: Any = None,
                      rlimit: Any = None, signal: Any = None, taskmap: Any = None, dependency: Any = None,
                      requires: Any = None, shell_options: Any = None, time_limit: Any = None,
                      attributes: Any = None, add_file: Any = None, **kwargs: Any) -> JobspecV1:
        """Apply ``flux submit`` options (from ``args``, a namespace, and keywords,
        which win); returns self. env and rlimit apply only when given (or with args)."""
        given = {"env": env, "rlimit": rlimit, "signal": signal, "taskmap": taskmap, "dependency": dependency,
                 "requires": requires, "shell_options": shell_options, "time_limit": time_limit,
                 "attributes": attributes, "add_file": add_file, **kwargs}
        registry = _plugins(prog)
        unknown = set(kwargs) - ({opt.dest for opt in registry.options} if registry is not None else set())
        if unknown:
            raise TypeError("apply_options() got unexpected keyword argument(s): "
                            + ", ".join(repr(k) for k in sorted(unknown)))
        opts = SimpleNamespace(**{**dict.fromkeys(given), **(vars(args) if args is not None else {}),
                                  **{k: v for k, v in given.items() if v is not None}})
        for key in ("requires", "dependency", "env", "rlimit"):
            if isinstance(getattr(opts, key, None), str):
                setattr(opts, key, [getattr(opts, key)])

        if env is not None or args is not None:
            self.environment, expand = _opts.filtered_environment(opts.env)
            if expand:
                self.setattr_shell_option("env-expand", expand)
        if rlimit is not None or args is not None:
            limits = _opts.filtered_rlimits(opts.rlimit)
            if limits:
                self.setattr_shell_option("rlimit", limits)
        if opts.signal:
            self.setattr_shell_option("signal", _opts.signal_option(opts.signal))
        if opts.taskmap is not None:
            self.setattr_shell_option("taskmap", _opts.uri_entry(opts.taskmap, "taskmap"))
        if opts.dependency is not None:
            self.setattr("system.dependencies", [_opts.uri_entry(uri) for uri in opts.dependency])
        if opts.requires is not None:
            query = " ".join(opts.requires)
            try:
                self.setattr("system.constraints", _constraint.parse(query))
            except ValueError as exc:
                raise ValueError(f"--requires='{query}': {exc}") from None
        for keyval in getattr(opts, "setopt", None) or ():
            self.setattr_shell_option(*_opts.parse_keyval("--setopt", keyval))
        for key, val in (opts.shell_options or {}).items():
            self.setattr_shell_option(key, val)
        if opts.time_limit is not None:
            self.duration = _opts.decode_duration(opts.time_limit)
        pairs = [_opts.parse_keyval("--setattr", kv) for kv in getattr(opts, "setattr", None) or ()]
        for key, val in pairs + list((opts.attributes or {}).items()):
            self.setattr(_jobspec.setattr_key(key), val)
        for arg in opts.add_file or ():
            name, data, perms = _opts.add_file_arg(arg)
            try:
                self.add_file(name, data, perms=perms)
            except (TypeError, ValueError, OSError) as exc:
                raise ValueError(f"--add-file={arg}: {exc}") from None
        if registry is not None:
            if _preinit:
                for opt in registry.options:  # plugin options not given take their defaults
                    if opt.dest not in vars(opts):
                        setattr(opts, opt.dest, opt.kwargs.get("default"))
                registry.preinit(opts)
            registry.modify_jobspec(opts, self)
        return self


# builder keywords from_alloc/from_batch pass on to from_command (the rest go to apply_options)
_BUILDER_KEYS = ("name", "queue", "bank", "output", "error", "input", "label_io", "unbuffered")


def normalize_conf(conf: Any) -> dict | None:
    """A broker config as a dict: from a dict, a BatchConfig or a ``--conf`` value."""
    if conf is None or isinstance(conf, dict):
        return conf
    if isinstance(conf, BatchConfig):
        return conf.config
    return BatchConfig().update(str(conf)).config


def _plugins(prog: str | None) -> Any:
    """The CLI plugins of ``prog`` (FLUX_CLI_PLUGINPATH), or None."""
    return CLIPluginRegistry(prog) if prog else None
