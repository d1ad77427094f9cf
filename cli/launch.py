"""The flux-lite program's entry point: `python` starts at once, all else loads the command table.

`flux python` is how scripts reach Flux's Python API. Flux's is a small C
program exec'ing the interpreter, costing nothing next to Python's own
start-up; flux-lite's must not pay for click and the command table either,
so `[--state-dir DIR] python ARGS` is recognised here, before they load.
"""

import os
import sys

from flux_lite import bindings


def _python_request(argv):
    """(state_dir or None, ARGS) when argv is `[--state-dir DIR] python ARGS`, else None."""
    state, i = None, 0
    while i < len(argv):
        if argv[i] == "--state-dir" and i + 1 < len(argv):
            state, i = argv[i + 1], i + 2
        elif argv[i].startswith("--state-dir="):
            state, i = argv[i].split("=", 1)[1], i + 1
        else:
            break
    if i < len(argv) and argv[i] == "python" and state != "":  # (an empty DIR gets click's error)
        return state, argv[i + 1:]
    return None


def python(state_dir, args, prog="flux-lite python"):
    """Run `python ARGS` as flux-lite's `python` command does; returns an exit code if it does not exec."""
    if args[:1] == ["--get-path"]:
        sys.stdout.write(f"{bindings.PATH}\n")
        return 0
    if args[:1] == ["--list-versions"]:
        sys.stdout.write(f"python{sys.version_info.major}.{sys.version_info.minor}\n")
        return 0
    env = dict(os.environ, PYTHONPATH=bindings.pythonpath())
    if state_dir:
        env["FLUX_LITE_STATE_DIR"] = os.path.abspath(state_dir)
    sys.stdout.flush()
    try:
        os.execve(sys.executable, [sys.executable, *args], env)
    except OSError as exc:
        sys.stderr.write(f"{prog}: execvp ({sys.executable}): {exc.strerror}\n")
        return 1


def main(argv=None, prog_name=None):
    request = _python_request(sys.argv[1:] if argv is None else list(argv))
    if request is not None:
        name = prog_name or ("flux" if os.path.basename(sys.argv[0]) == "flux" else "flux-lite")
        return sys.exit(python(*request, prog=f"{name}-python" if name == "flux" else f"{name} python"))
    # the command table: a declared lazy point (the program starts here)
    from flux_lite.cli.main import main as run

    return run(argv, prog_name)
