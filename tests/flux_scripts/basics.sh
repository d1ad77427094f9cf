#!/bin/sh
# Basic commands of a Flux session (resource list/status, submit, eventlog,
# cancel, results), as a Flux test script would run them
set -e
flux resource list
flux resource status
flux jobs -a
flux jobs -a -n
id=$(flux submit -N1 -t 5m --setattr=exec.test.run_duration=60s hostname)
flux job wait-event -t 30 $id start >/dev/null
flux jobs -no '{name} {state} {status} {nnodes} {ranks} {duration}'
flux job eventlog $id | cut -d' ' -f2-
test "$(flux job id --to=f58plain $id)" = "$(echo $id | sed 's/^ƒ/f/')"
flux job timeleft $id
flux resource list
flux cancel $id
flux job wait-event -t 30 $id clean >/dev/null
flux job eventlog $id | cut -d' ' -f2-
id2=$(flux submit -N1 -t 5m --setattr=exec.test.run_duration=0.2s hostname)
flux job wait-event -t 30 $id2 clean >/dev/null
flux jobs -a -o '{name} {state} {result} {status} {returncode} {exception.type} {exception.note}'
