#!/bin/bash
# flux-sched's own sharness tests (those that need no real execution) run
# through a `flux`: real Flux with Fluxion installed, or flux-lite under the
# program name `flux` (its native Flux mode). Prints a per-test pass table.
#
#   bench/fluxion_sharness.sh [-j N] SIDE [TEST...]
#   bench/fluxion_sharness.sh table            # the table of both sides' last runs
#
# SIDE:
#   real   $FLUX_REAL_BIN/flux, a flux-core with flux-sched installed in the same
#          prefix (tests run with FLUX_SCHED_TEST_INSTALLED=1, as flux-sched's
#          "make installcheck" does)
#   lite   flux-lite through the shim $FLUX_SHIM (flux-core's sharness shim,
#          ../shared/sharness/shim/flux: `flux start` options translated to
#          flux-lite's, every other command is flux-lite's own as `flux`)
# TEST:    tNNNN-name.t files of $FLUX_SCHED_SRC/t, or none for the default list
#          (DEFAULT_TESTS below: flux-sched's tests that need no real execution)
#
# Environment:
#   FLUX_SCHED_SRC  flux-sched source tree (its t/ is run in place; nothing is
#                   copied into this repository)               (required)
#   FLUX_REAL_BIN   directory of the real flux (side real)
#   FLUX_LITE       the flux-lite executable (side lite; default: flux-lite on PATH)
#   FLUX_SHIM       flux-core's sharness shim (side lite; default
#                   ../shared/sharness/shim/flux next to this repository)
#   SH_WORK         output directory (default ${TMPDIR:-/tmp}/fluxion-sharness)
#   SH_TIMEOUT      seconds per test file (default 300)
#   SH_CMD_TIMEOUT  side lite: seconds after which the shim kills one flux
#                   command (default 20)
#
# Output: $SH_WORK/SIDE/NAME.log (the -v output), NAME.counts
# ("total ok skip fail rc seconds"); the table on stdout.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
DEFAULT_TESTS="t1002-qmanager-reload.t t1003-qmanager-policy.t t1004-qmanager-optimize.t
t1005-qmanager-conf.t t1006-qmanager-multiqueue.t t1007-recovery-full.t t1010-sync-modules.t
t1011-dynstate-change.t t1012-find-status.t t1013-qmanager-priority.t t1014-annotation.t
t1015-find-format.t t1020-qmanager-feasibility.t t1021-qmanager-nodex.t t1025-rv1-reload.t
t1033-qmanager-vqueue.t t4009-match-update.t t4010-match-conf.t t6002-graph-hwloc.t"
W=${SH_WORK:-${TMPDIR:-/tmp}/fluxion-sharness}
JOBS=1
if [ "${1:-}" = -j ]; then JOBS=$2; shift 2; fi
SIDE=${1:?usage: fluxion_sharness.sh [-j N] real|lite|table [TEST...]}; shift

table() {
    python3 - "$W" <<'EOF'
import os, sys
w = sys.argv[1]
def counts(side):
    out = {}
    d = os.path.join(w, side)
    if os.path.isdir(d):
        for f in sorted(os.listdir(d)):
            if f.endswith(".counts"):
                out[f[:-7]] = open(os.path.join(d, f)).read().split()
    return out
real, lite = counts("real"), counts("lite")
names = sorted(set(real) | set(lite))
def cell(c):
    return f"{c[1]}/{c[0]}" + (f" ({c[2]} skip)" if c[2] != "0" else "") if c else "-"
print(f"| {'test':<32} | {'real Fluxion (ok/total)':<24} | {'flux-lite (ok/total)':<24} |")
print(f"|{'-' * 34}|{'-' * 26}|{'-' * 26}|")
tot = {"real": [0, 0], "lite": [0, 0]}
for n in names:
    r, l = real.get(n), lite.get(n)
    for side, c in (("real", r), ("lite", l)):
        if c:
            tot[side][0] += int(c[1])
            tot[side][1] += int(c[0])
    print(f"| {n:<32} | {cell(r):<24} | {cell(l):<24} |")
print(f"| {'total':<32} | {tot['real'][0]}/{tot['real'][1]:<20} | {tot['lite'][0]}/{tot['lite'][1]:<20} |")
EOF
}

if [ "$SIDE" = table ]; then table; exit 0; fi
: "${FLUX_SCHED_SRC:?set FLUX_SCHED_SRC to a flux-sched source tree}"
[ -d "$FLUX_SCHED_SRC/t" ] || { echo "fluxion_sharness.sh: no t/ in $FLUX_SCHED_SRC" >&2; exit 2; }
case "$SIDE" in
    real) : "${FLUX_REAL_BIN:?set FLUX_REAL_BIN}"; BIN=$FLUX_REAL_BIN;;
    lite)
        FLUX_LITE=${FLUX_LITE:-$(command -v flux-lite)}
        [ -x "$FLUX_LITE" ] || { echo "fluxion_sharness.sh: set FLUX_LITE" >&2; exit 2; }
        SHIM=${FLUX_SHIM:-$HERE/../../shared/sharness/shim/flux}
        [ -x "$SHIM" ] || { echo "fluxion_sharness.sh: no shim at $SHIM (set FLUX_SHIM)" >&2; exit 2; }
        BIN=$(cd "$(dirname "$SHIM")" && pwd);;
    *) echo "fluxion_sharness.sh: unknown side $SIDE" >&2; exit 2;;
esac
[ $# -gt 0 ] || set -- $DEFAULT_TESTS
mkdir -p "$W/$SIDE"
W=$(cd "$W" && pwd)
if [ "$SIDE" = lite ]; then
    # flux-lite under the program name flux (native Flux mode)
    mkdir -p "$W/lite-bin"
    ln -sfn "$FLUX_LITE" "$W/lite-bin/flux"
fi
BASEPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

run_one() {
    local t=$1 name=${1%.t} out=$W/$SIDE t0 rc
    [ -f "$FLUX_SCHED_SRC/t/$t" ] || { echo "$t: no such test" >&2; return; }
    t0=$(date +%s)
    (
        cd "$out" || exit 1
        export PATH=$BIN:$BASEPATH
        unset FLUX_URI FLUX_LITE_STATE_DIR TEST_UNDER_FLUX_ACTIVE PYTHONPATH
        export TMPDIR=$W/tmp/$SIDE
        mkdir -p "$TMPDIR"
        # sharness writes its trash directories next to the test by default
        export SHARNESS_TEST_OUTPUT_DIRECTORY=$out
        if [ "$SIDE" = real ]; then
            export FLUX_SCHED_TEST_INSTALLED=1
        else
            export FLUX_SHIM_FLUX=$W/lite-bin/flux FLUX_SHIM_NATIVE=1 FLUX_LITE
            export FLUX_SHIM_PYCACHE=$W/pycache FLUX_SHIM_LOG=$out/$name.shimlog
            export FLUX_SHIM_CMD_TIMEOUT=${SH_CMD_TIMEOUT:-20}
            rm -f "$FLUX_SHIM_LOG"
        fi
        exec timeout -k 10 "${SH_TIMEOUT:-300}" "$FLUX_SCHED_SRC/t/$t" -v </dev/null
    ) >"$out/$name.log" 2>&1
    rc=$?
    python3 - "$out/$name.log" "$rc" "$(( $(date +%s) - t0 ))" >"$out/$name.counts" <<'EOF'
import re, sys
ok = fail = skip = 0
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"(not ok|ok) \d+( - .*)?$", line.rstrip("\n"))
    if not m:
        continue
    if m.group(1) == "ok":
        if re.search(r"# (skip|SKIP)\b", line):
            skip += 1
        else:
            ok += 1
    elif not re.search(r"# TODO\b", line):
        fail += 1
print(ok + fail + skip, ok, skip, fail, sys.argv[2], sys.argv[3])
EOF
    printf '%-36s %-5s %s\n' "$t" "$SIDE" "$(cat "$out/$name.counts")" >&2
}
export -f run_one
export W SIDE BIN BASEPATH FLUX_SCHED_SRC
export FLUX_LITE=${FLUX_LITE:-}
printf '%s\n' "$@" | xargs -P "$JOBS" -I{} bash -c 'run_one "$1"' _ {}
table
