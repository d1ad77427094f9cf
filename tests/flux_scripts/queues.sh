#!/bin/sh
# The anonymous queue as an admin script drives it (flux queue, Flux 0.88),
# unchanged. Job ids are masked as ID, timestamps as T; ESC is shown as ~.
# Every output line is the text Flux printed for the command.
mask() { sed -e 's/ƒ[1-9A-HJ-NP-Za-km-z]\{4,\}/ID/g' -e 's/^[0-9]*\.[0-9]* /T /' | tr '\033' '~'; }
run() { { echo "\$ flux $*"; flux "$@" 2>&1; echo "[exit $?]"; } | mask; }

run queue list
run queue list -n
run queue list -o "{queue},{queuem},{submission},{scheduling},{enabled},{started},{enabled.ascii},{started.ascii}"
run queue list -q batch
run queue status -v
run queue status batch
run queue stop batch
run queue disable -m "no such queue" batch
run submit -q x true
run submit -q default true
run queue stop -m "maintenance window"
run queue list -o "{queue}|{submission}|{scheduling}|{enabled.ascii}|{started.ascii}"
id=$(flux submit --setattr=exec.test.run_duration=60s true)
run jobs -o "{id.f58} {state} {status} {queue} {annotations.sched.reason_pending}" -a
run job eventlog $id
run queue status -v
run queue idle -t 1s
run queue drain -t 0.5s
run queue start
run queue status -v
run queue idle -t 0.5s
run cancel $id
run queue idle -t 10s
run queue drain -t 10s
run queue disable -m "system upgrade"
run queue list
run submit --setattr=exec.test.run_duration=1s true
run run --setattr=exec.test.run_duration=1s true
run queue disable
run queue status
run queue enable
run queue enable --quiet
run queue stop --quiet
run queue start -v
run queue stop --all
run queue start --all
run queue list -o help
run queue list -o policy
run queue list -o nodes
run queue list -o "{bogus}"
run queue drain --timeout=bad
run queue bogus
run queue
