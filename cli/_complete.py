"""Shell completion: candidates that depend on the instance (job ids, targets, modules).

Click calls these callbacks when the shell asks for completions
(``_FLUX_LITE_COMPLETE=bash_complete`` and friends, set by the scripts in
completions/). They run at every TAB, so they only read: the instance is
opened without catching it up to "now", no transaction is started, SQLite is
put in query-only mode with a short busy timeout, and any error at all gives
no candidates instead of a traceback in the user's shell.

During completion no command callback runs, so ``ctx.obj`` is still empty;
the state directory comes from the root context's parsed ``--state-dir``
(or $FLUX_LITE_STATE_DIR, as for every command).
"""

import contextlib

import click
from click.shell_completion import CompletionItem


# how many inactive jobs to offer after the active ones, and how many inactive
# rows to look at when a prefix filters them
MAX_INACTIVE = 25
MAX_INACTIVE_SCAN = 5000
BUSY_TIMEOUT_MS = 250

# update KEY=VALUE: the keys with special handling (see flux-lite-update(1))
UPDATE_KEYS = (
    ("duration", "time limit: FSD, inf, +FSD or -FSD"),
    ("name", "job name"),
    ("queue", "queue name"),
)
UPDATE_VALUES = {"duration": (("inf", "unlimited"),)}

def _state_dir(ctx):
    root = ctx.find_root() if ctx is not None else None
    if root is None:
        return None
    value = (root.params or {}).get("state_dir")
    if not value and isinstance(root.obj, dict):
        value = root.obj.get("state_dir")
    return value


@contextlib.contextmanager
def _instance(ctx):
    """The instance, opened for reading only; closed afterwards."""
    from flux_lite.instance import Instance

    inst = Instance.open(_state_dir(ctx))
    try:
        conn = inst.kvs.conn
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA query_only = 1")
        yield inst
    finally:
        inst.close()


def _never_fail(func):
    """Completion must not break the shell: any error means no candidates."""

    def wrapper(*args, **kwargs):
        try:
            return list(func(*args, **kwargs))
        except Exception:  # noqa: BLE001 - deliberately everything
            return []

    wrapper.__name__ = func.__name__
    wrapper.__doc__ = func.__doc__
    return wrapper


def _items(pairs, incomplete):
    """(value, help) pairs -> CompletionItems whose value starts with incomplete."""
    return [CompletionItem(value, help=help_) for value, help_ in pairs if value.startswith(incomplete)]


# -- job ids ------------------------------------------------------------------------


def _jobid_text(jobid, incomplete):
    """The encoding of jobid the user is typing (f58 by default), or None if no match."""
    from flux_lite.formats import jobid as jobidmod

    if not incomplete:
        return jobidmod.f58(jobid)
    for form in ("f58", "f58plain", "dec", "hex", "dothex", "kvs"):
        text = jobidmod.encode(jobid, form)
        if text.startswith(incomplete):
            return text
    return None


def _job_help(state, data, now):
    from flux_lite.job_manager.job import INACTIVE
    from flux_lite.job_manager.job import STATE_NAMES
    from flux_lite.listing.jobs import make_info

    name = data.get("name") or ""
    label = STATE_NAMES.get(state, "")
    if state == INACTIVE:
        try:
            label = make_info(data, now, str)["status"] or label
        except Exception:  # noqa: BLE001 - the label is decoration
            pass
    return f"{label} {name}".strip()


@_never_fail
def complete_jobids(ctx, incomplete, active_only=False):
    """Job ids (f58): active jobs newest first, then the most recently inactive
    (none with active_only: `update` changes only active jobs).

    A guest is offered only their own jobs; the instance owner every job. An
    incomplete value in another encoding (decimal, 0x hex, dothex) is
    completed in that encoding.
    """
    from flux_lite.access import visible_userid
    from flux_lite.job_manager import index
    from flux_lite.job_manager.job import INACTIVE

    import json

    out = []
    with _instance(ctx) as inst:
        conn = inst.kvs.conn

        userid = visible_userid(inst.identity)
        now = (inst.kvs.get("instance.clock") or {}).get("now", 0.0)
        count = 0
        for jobid, state, data in index.newest_rows(conn, userid, MAX_INACTIVE_SCAN):
            text = _jobid_text(jobid, incomplete)
            if text is None or (active_only and state == INACTIVE):
                continue
            out.append(CompletionItem(text, help=_job_help(state, json.loads(data), now)))
            if state == INACTIVE:
                if active_only:
                    break  # inactive rows come after the active ones
                count += 1
                if count >= MAX_INACTIVE:
                    break
    return out


@_never_fail
def complete_active_jobids(ctx, param, incomplete):
    """shell_complete for `update JOBID`: active jobs only."""
    return complete_jobids(ctx, incomplete, active_only=True)


# -- values of options and arguments ------------------------------------------------------

# flux job urgency's names (any number 0-31 too)
URGENCY_NAMES = (("hold", "0: held until released"), ("default", "16"), ("expedite", "31: ahead of all others"))


def complete_directory(ctx, param, incomplete):
    """A directory: the shell completes the path (--state-dir)."""
    return [CompletionItem(incomplete, type="dir")]


def complete_urgency(ctx, param, incomplete):
    return _items(URGENCY_NAMES, incomplete)


def complete_jobs_filter(ctx, param, incomplete):
    """-f STATES: a comma-separated list; each item completes on its own."""
    from flux_lite.job_list import FILTER_RESULTS
    from flux_lite.job_list import FILTER_STATES

    done, _sep, last = incomplete.rpartition(",")
    prefix = done + "," if _sep else ""
    given = set(done.split(",")) if done else set()
    return [CompletionItem(prefix + name) for name in [*FILTER_STATES, *FILTER_RESULTS]
            if name.startswith(last) and name not in given]


def complete_formats(listing, incomplete):
    """-o/--format: the listing's named formats, then `help`."""
    pairs = [(name, entry[0]) for name, entry in listing.formats.items()]
    return _items(pairs + [("help", "list the named formats")], incomplete)


# -- queues -----------------------------------------------------------------------------


def _queue_names(ctx):
    with _instance(ctx) as inst:
        queues = (inst.config or {}).get("queues") or {}
        return list(queues)


@_never_fail
def complete_queues(ctx, incomplete):
    """Configured queue names; a comma-separated list completes its last item."""
    head, _sep, last = incomplete.rpartition(",")
    prefix = head + "," if _sep else ""
    done = set(head.split(",")) if _sep else set()
    return [CompletionItem(prefix + name) for name in _queue_names(ctx)
            if name.startswith(last) and name not in done]


# -- submit/run --dependency=URI -------------------------------------------------------

DEPENDENCY_SCHEMES = (
    ("afterok:", "after JOBID completes successfully"),
    ("afternotok:", "after JOBID fails"),
    ("afterany:", "after JOBID ends"),
    ("afterstart:", "after JOBID starts"),
    ("afterexcept:", "after JOBID ends by an exception"),
    ("singleton", "one job of this name at a time (needs --job-name)"),
    ("begin-time:", "not before TIMESTAMP"),
)


@_never_fail
def complete_dependency(ctx, param, incomplete):
    """SCHEME: first, then the job ids an after* scheme waits on (bash, which
    splits words at ':', gets the job ids as a word of their own)."""
    scheme, colon, rest = incomplete.partition(":")
    if colon and scheme.startswith("after"):
        return [CompletionItem(f"{scheme}:{item.value}", help=item.help)
                for item in complete_jobids(ctx, rest)]
    if colon:
        return []
    return _items(DEPENDENCY_SCHEMES, incomplete)


# -- flux-lite update KEY=VALUE -------------------------------------------------------


def _update_values(ctx, key):
    if key == "queue":
        return [(name, "queue") for name in _queue_names(ctx)]
    return UPDATE_VALUES.get(key, ())


@_never_fail
def complete_update_pairs(ctx, param, incomplete):
    """KEY=VALUE for update: the special keys (duration=, name=, queue=), then values.

    bash splits words at '=' (COMP_WORDBREAKS), so "duration=" arrives as the
    words "duration" and "="; zsh and fish keep "duration=..." as one word.
    """
    given = list(ctx.params.get(param.name) or ()) if ctx is not None else []
    if "=" in incomplete:
        key, _eq, value = incomplete.partition("=")
        return [CompletionItem(f"{key}={item.value}", help=item.help)
                for item in _items(_update_values(ctx, key), value)]
    if given and given[-1] == "=":
        key = given[-2] if len(given) > 1 else ""
        return _items(_update_values(ctx, key), incomplete)
    used = set()
    for i, word in enumerate(given):
        if "=" in word and word != "=":
            used.add(word.partition("=")[0])
        elif i + 1 < len(given) and given[i + 1] == "=":
            used.add(word)
    return _items(((f"{key}=", help_) for key, help_ in UPDATE_KEYS if key not in used), incomplete)


# -- housekeeping ---------------------------------------------------------------------


def _housekeeping_allocs(inst):
    return inst.kvs.get("job-manager.housekeeping") or {}


@_never_fail
def complete_targets(ctx, param, incomplete):
    """Hosts and ranks of the instance; those whose housekeeping still runs come first."""
    from flux_lite.formats.idset import IDset
    from flux_lite.formats.rset import Rset

    with _instance(ctx) as inst:
        rset = Rset.from_dict(inst.kvs.get("resource.R"))
        busy = set()
        for alloc in _housekeeping_allocs(inst).values():
            try:
                busy |= set(IDset.parse(alloc.get("pending") or ""))
            except Exception:  # noqa: BLE001 - skip a record we cannot read
                continue
    nodes = [(rank, rset.hostname(rank)) for rank in rset.ranks]
    nodes.sort(key=lambda node: node[0] not in busy)

    def note(rank):
        return " (housekeeping running)" if rank in busy else ""

    pairs = [(host, f"rank {rank}{note(rank)}") for rank, host in nodes]
    pairs += [(str(rank), f"{host}{note(rank)}") for rank, host in nodes]
    return _items(pairs, incomplete)


@_never_fail
def complete_housekeeping_jobids(ctx, param, incomplete):
    """Jobs whose nodes are in housekeeping, then "all"."""
    pairs = []
    try:
        with _instance(ctx) as inst:
            allocs = _housekeeping_allocs(inst)
        for key in sorted(allocs, key=int):
            text = _jobid_text(int(key), incomplete)
            if text is not None:
                pairs.append((text, f"housekeeping running on ranks {allocs[key].get('pending') or '-'}"))
    except Exception:  # noqa: BLE001 - no instance: "all" is still valid
        pass
    pairs.append(("all", "every housekeeping job"))
    return _items(pairs, incomplete)


# -- modules -----------------------------------------------------------------------------


@_never_fail
def complete_sched_modules(ctx, param, incomplete):
    """The modules that can be loaded, removed or reloaded: the scheduler
    modules, job-exec, job-ingest and resource (and a module file's name, when
    one is loaded)."""
    from flux_lite.sched import registry

    builtin = [("job-exec", "the execution system"), ("job-ingest", "job submission"),
               ("resource", "the resource module")]
    modules = registry.modules()
    loaded = [(name, "scheduler module file") for name, _what in _loaded_scheduler(ctx) if name not in modules]
    described = {name: cls.description for name, cls in modules.items()}
    described.update((name, registry.companion_class(name).description) for name in registry.companion_names())
    return _items([*builtin, *((name, described[name]) for name in registry.all_module_names()), *loaded],
                  incomplete)


def _loaded_scheduler(ctx):
    """[(name, "scheduler")] for the loaded scheduler module; [] without one
    or without an instance (the other candidates are still offered)."""
    try:
        with _instance(ctx) as inst:
            rec = inst.kvs.get("sched.module")
    except Exception:  # noqa: BLE001 - no instance
        return []
    return [(rec["name"], "scheduler")] if rec else []


@_never_fail
def complete_loaded_modules(ctx, param, incomplete):
    """Modules that are loaded: job-manager, resource and the scheduler, if any."""
    pairs = [("job-manager", "job manager"), ("resource", "resource module")]
    return _items(pairs + _loaded_scheduler(ctx), incomplete)


@_never_fail
def complete_debug_modules(ctx, param, incomplete):
    """Modules with debug flags: the loaded scheduler and job-exec."""
    return _items(_loaded_scheduler(ctx) + [("job-exec", "simulated execution system")], incomplete)


@_never_fail
def complete_module_args(ctx, param, incomplete):
    """ARGS of module load/reload for the module named before them (as the module declares them)."""
    from flux_lite.sched import registry

    name = (ctx.params or {}).get("name") if ctx is not None else None
    args = [arg for arg in registry.module_args(name) if arg.complete] if name else []
    companion = registry.companion_class(name) if name else None
    if companion is not None:  # Fluxion's resource and feasibility modules: their table's keys
        args = [ModuleArgLike(key, companion.arg_values.get(key, ())) for key in companion.arg_keys]
    if "=" in incomplete:
        key, _eq, value = incomplete.partition("=")
        spec = next((arg for arg in args if arg.key == key and not arg.flag), None)
        if spec is None:
            return []
        return [CompletionItem(f"{key}={v}") for v in spec.values if v.startswith(value)]
    return _items(((arg.key if arg.flag else f"{arg.key}=", arg.help) for arg in args), incomplete)


class ModuleArgLike:
    """A companion module's argument, as completion reads a ModuleArg."""

    def __init__(self, key, values=()):
        self.key, self.values, self.help, self.flag, self.complete = key, values, "", False, True


class PolicyChoice(click.Choice):
    """The registered policies (``sched.policy`` values), as an option's
    choices: read from the registry whenever click asks (validation, help,
    completion), never fixed when the command's module is imported, so a
    policy file added later is offered and accepted like the others."""

    def __init__(self, multiple: bool = False) -> None:
        super().__init__(())
        self.multiple = multiple  # a comma-separated list of policies, none twice

    @property
    def choices(self):
        from flux_lite.sched import registry

        return registry.policies()

    def convert(self, value, param, ctx):
        if not self.multiple or isinstance(value, list):
            return super().convert(value, param, ctx)
        names = [super(PolicyChoice, self).convert(v.strip(), param, ctx) for v in value.split(",")]
        if len(set(names)) != len(names):
            self.fail(f"{value!r} names a policy twice", param, ctx)
        return names

    @choices.setter
    def choices(self, _value):
        pass  # click.Choice.__init__ sets them; they are the registry's

    @_never_fail
    def shell_complete(self, ctx, param, incomplete):
        """Each policy with its module's description."""
        from flux_lite.sched import registry

        done, _, last = incomplete.rpartition(",") if self.multiple else ("", "", incomplete)
        prefix = done + "," if done else ""
        return _items(((prefix + policy, cls.description) for cls in registry.modules().values()
                       for policy in cls.policies), prefix + last)


# -- shell scripts ---------------------------------------------------------------------------

PROG_NAME = "flux-lite"
COMPLETE_VAR = "_FLUX_LITE_COMPLETE"
SHELLS = ("bash", "zsh", "fish")

# click 8.4.0 and 8.4.1 shipped a fish script that cannot run (an unquoted \n
# split `string split` over two lines, pallets/click#3502); every other click
# release has this template. It is used in place of a broken one so that the
# committed script is the same whatever click generated it.
_FISH_SOURCE = """\
function %(complete_func)s;
    set -l response (env %(complete_var)s=fish_complete COMP_WORDS=(commandline -cp) \
COMP_CWORD=(commandline -t) %(prog_name)s);

    for completion in $response;
        set -l metadata (string split "," $completion);

        if test $metadata[1] = "dir";
            __fish_complete_directories $metadata[2];
        else if test $metadata[1] = "file";
            __fish_complete_path $metadata[2];
        else if test $metadata[1] = "plain";
            echo $metadata[2];
        end;
    end;
end;

complete --no-files --command %(prog_name)s --arguments \
"(%(complete_func)s)";
"""


def _bash_source(template):
    """click's bash script, but a KEY= candidate (update's duration=, a module's
    queue-depth=) is completed without a trailing space: its value follows."""
    return template.replace("            COMPREPLY+=($value)\n",
                            "            COMPREPLY+=($value)\n"
                            "            [[ $value == *= ]] && compopt -o nospace\n", 1)


def _zsh_source(template):
    """click's zsh script, with KEY= candidates added without a suffix (see _bash_source)."""
    return template.replace(
        "    local -a completions_with_descriptions\n",
        "    local -a completions_with_descriptions\n"
        "    local -a completions_eq\n"
        "    local -a completions_eq_with_descriptions\n", 1,
    ).replace(
        '        if [[ "$type" == "plain" ]]; then\n            if [[ "$descr" == "_" ]]; then\n',
        '        if [[ "$type" == "plain" && "$key" == *= ]]; then\n'
        '            if [[ "$descr" == "_" ]]; then\n'
        '                completions_eq+=("$key")\n'
        '            else\n'
        '                completions_eq_with_descriptions+=("$key":"$descr")\n'
        '            fi\n'
        '        elif [[ "$type" == "plain" ]]; then\n'
        '            if [[ "$descr" == "_" ]]; then\n', 1,
    ).replace(
        "    if [ -n \"$completions\" ]; then\n        compadd -U -V unsorted -a completions\n    fi\n",
        "    if [ -n \"$completions\" ]; then\n        compadd -U -V unsorted -a completions\n    fi\n\n"
        "    if [ -n \"$completions_eq_with_descriptions\" ]; then\n"
        "        _describe -V unsorted completions_eq_with_descriptions -U -S ''\n    fi\n\n"
        "    if [ -n \"$completions_eq\" ]; then\n"
        "        compadd -U -S '' -V unsorted -a completions_eq\n    fi\n", 1)


def _join_option_values(args, incomplete):
    """bash splits words at '=' (COMP_WORDBREAKS): `--state-dir=DIR` arrives
    as "--state-dir", "=", "DIR". Join them back, as the command line means
    them; `--opt=` being completed leaves the option waiting for its value."""
    out = []
    i = 0
    while i < len(args):
        if args[i].startswith("--") and i + 1 < len(args) and args[i + 1] == "=":
            if i + 2 < len(args):
                out.append(f"{args[i]}={args[i + 2]}")
                i += 3
                continue
            out.append(args[i])  # "--opt", "=" then the value being completed
            i += 2
            continue
        out.append(args[i])
        i += 1
    if incomplete == "=" and out and out[-1].startswith("--") and (not args or args[-1] != "="):
        incomplete = ""  # the cursor just after `--opt=`
    return out, incomplete


def register_completion_classes():
    """flux-lite's bash and zsh completion (KEY= without a space, `--opt=VALUE`
    in bash), and fish's repair (fix_fish_completion). Called before cli.main()
    when _FLUX_LITE_COMPLETE is set, and to print the scripts."""
    from click import shell_completion as sc

    fix_fish_completion()
    if getattr(sc.get_completion_class("bash"), "flux_lite", False):
        return  # registered already

    class BashComplete(sc.BashComplete):
        flux_lite = True
        source_template = _bash_source(sc.BashComplete.source_template)

        def get_completion_args(self):
            args, incomplete = super().get_completion_args()
            return _join_option_values(args, incomplete)

    class ZshComplete(sc.ZshComplete):
        flux_lite = True
        source_template = _zsh_source(sc.ZshComplete.source_template)

    sc.add_completion_class(BashComplete, "bash")
    sc.add_completion_class(ZshComplete, "zsh")


def completion_source(shell, cli):
    """The completion script for shell and the command group cli, as the
    `<shell>_source` instruction prints it."""
    import re

    from click.shell_completion import get_completion_class

    register_completion_classes()
    cls = get_completion_class(shell)
    if cls is None:
        raise ValueError(f"click has no completion support for {shell}")
    comp = cls(cli, {}, PROG_NAME, COMPLETE_VAR)
    if shell == "bash":
        # BashComplete.source() first runs `bash --version` to warn about old
        # bash; the script itself does not depend on it
        text = comp.source_template % comp.source_vars()
    else:
        text = comp.source()
    if shell == "fish" and re.search(r"string split\s*\n", text):
        text = _FISH_SOURCE % comp.source_vars()
    # the instruction echoes the script, i.e. with one more newline
    return text + "\n"


def fix_fish_completion():
    """Make fish completion work under click 8.4.0/8.4.1 (pallets/click#3502).

    Those releases answer fish with three lines per candidate, which no fish
    script can read. Registering this class restores the one-line
    "type,value<TAB>help" answer every other release gives. Call it before
    cli.main() when _FLUX_LITE_COMPLETE is set; it changes nothing otherwise.
    """
    from click import shell_completion as sc

    try:
        probe = sc.FishComplete.format_completion(None, CompletionItem("v", help="h"))
    except Exception:  # noqa: BLE001 - a future click: leave it alone
        return False
    if "\n" not in probe:
        return False

    class FishComplete(sc.FishComplete):
        source_template = _FISH_SOURCE

        def format_completion(self, item):
            if item.help:
                help_ = item.help.replace("\n", "\\n").replace("\t", " ")
                return f"{item.type},{item.value}\t{help_}"
            return f"{item.type},{item.value}"

    sc.add_completion_class(FishComplete, "fish")
    return True
