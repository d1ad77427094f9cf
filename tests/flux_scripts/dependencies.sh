#!/bin/sh
# Job dependencies (RFC 26) as a Flux 0.88 script uses them, unchanged: the
# DEPEND state, dependency events, exceptions, listings and every error.
# Job ids are masked as ID, timestamps as T; every output line is the text
# Flux printed for the command.
mask() { sed -e 's/ƒ[1-9A-HJ-NP-Za-km-z]\{4,\}/ID/g' -e 's/^[0-9]*\.[0-9]* /T /'; }
run() { { echo "\$ flux $*"; flux "$@" 2>&1; echo "[exit $?]"; } | mask; }
RD=--setattr=exec.test.run_duration
FAIL=--setattr=exec.test.wait_status=256
held() { flux submit --urgency=hold "$@" true; }

a=$(held $RD=1s)
b=$(flux submit --dependency=afterok:$a $RD=1ms true)
run jobs
run jobs -a -o deps
run jobs -a -o "{state} {state_single} {status} {status_abbrev} {dependencies} {annotations.sched.reason_pending}"
run job eventlog $b
run job urgency $a default
run job wait-event $b clean
run job eventlog $b
run jobs -a -o deps

a=$(flux submit --urgency=hold $FAIL $RD=0.1s false)
b=$(flux submit --dependency=afterok:$a $RD=1ms true)
flux job urgency $a default
run job wait-event $b clean
run job eventlog $b
run jobs -a -o "{status} {result} {exception.type} {exception.note}" $a $b

a=$(held $RD=1s)
b=$(flux submit --dependency=afterok:$a $RD=1ms true)
flux cancel $a
run job eventlog $b

a=$(flux submit $RD=300s true)
b=$(flux submit --dependency=afterok:$a $RD=1ms true)
flux cancel $a
run job eventlog $b

a=$(flux submit --urgency=hold $FAIL $RD=0.1s false)
b=$(flux submit --dependency=afternotok:$a $RD=1ms true)
run jobs -no "{state} {dependencies}" $b
flux job urgency $a default
run job wait-event $b clean
run job eventlog $b
a=$(held $RD=0.1s)
b=$(flux submit --dependency=afternotok:$a $RD=1ms true)
flux job urgency $a default
run job wait-event $b clean
run job eventlog $b

a=$(held $RD=1s)
b=$(flux submit --dependency=afterany:$a $RD=1ms true)
run jobs -no "{state} {dependencies}" $b
flux cancel $a
run job wait-event $b clean
run job eventlog $b

a=$(held $RD=2s)
b=$(flux submit --dependency=afterstart:$a $RD=1ms true)
run submit --dependency=after:$a $RD=1ms true
c=$(flux job last)
run jobs -o deps
run job eventlog $c
flux job urgency $a default
run job wait-event $c clean
run job eventlog $b
run job eventlog $c
run jobs -no "{state} {status}" $a
a=$(held $RD=1s)
b=$(flux submit --dependency=afterstart:$a $RD=1ms true)
flux cancel $a
run job eventlog $b

a=$(held -t 1s $RD=60s)
b=$(flux submit --dependency=afterexcept:$a $RD=1ms true)
flux job urgency $a default
run job wait-event $b clean
run job eventlog $a
run job eventlog $b
a=$(held $RD=0.1s)
b=$(flux submit --dependency=afterexcept:$a $RD=1ms true)
flux job urgency $a default
run job wait-event $b clean
run job eventlog $b

run run $RD=1ms true
ok=$(flux job last)
run run $FAIL $RD=1ms false
bad=$(flux job last)
b=$(flux submit --dependency=afterok:$ok $RD=1ms true)
run job wait-event $b clean
run job eventlog $b
run submit --dependency=afterok:$bad $RD=1ms true
run submit --dependency=afternotok:$ok $RD=1ms true
run submit --dependency=afterexcept:$ok $RD=1ms true
run run --dependency=afterok:$bad $RD=1ms true
b=$(flux submit --dependency=afterstart:$ok $RD=1ms true)
run job wait-event $b clean
run job eventlog $b

run submit --dependency=afterok:f1234 $RD=1ms true
run submit --dependency=afterok:1234 $RD=1ms true
run submit --dependency=afterok:-1 $RD=1ms true
run submit --dependency=afterok:bar $RD=1ms true
run submit --dependency=afterok $RD=1ms true
run submit --dependency=afterok: $RD=1ms true
run submit --dependency=foo:1 $RD=1ms true
run submit --dependency=foo $RD=1ms true
run submit --dependency= $RD=1ms true
run submit --dependency=begin-time:bad $RD=1ms true
run submit --begin-time=bad $RD=1ms true
run submit --dependency=singleton $RD=1ms true

b=$(flux submit --begin-time=+1m $RD=1ms true)
c=$(flux submit --dependency=begin-time:1 $RD=1ms true)
run job wait-event $c clean
run job eventlog $c
flux cancel $b
run job eventlog $b

s1=$(flux submit --job-name=solo --dependency=singleton $RD=2s true)
s2=$(flux submit --job-name=solo --dependency=singleton $RD=1ms true)
s3=$(flux submit --job-name=solo --dependency=singleton $RD=1ms true)
s4=$(flux submit --job-name=solo $RD=1ms true)
run jobs -o deps
run job eventlog $s2
run job wait-event $s3 clean
run job eventlog $s3

a=$(held $RD=1s)
b=$(held $RD=1s)
c=$(flux submit --dependency=afterok:$a --dependency=afterany:$b $RD=1ms true)
run jobs -o deps
run jobs
run job urgency $c 31
run job urgency $c hold
run job urgency -v $c expedite
run job urgency $c default
flux job urgency $a default
run job wait-event $a clean
run jobs -o deps $c
run cancel $c
run job eventlog $c
run jobs -a -o "{state} {status} {result} {dependencies}" $c
flux cancel $b

a=$(flux submit --urgency=hold $FAIL $RD=0.1s false)
b=$(flux submit --dependency=afterok:$a $RD=1ms true)
c=$(flux submit --dependency=afterok:$b $RD=1ms true)
flux job urgency $a default
run job wait-event $c clean
run job eventlog $c
run jobs -a -o "{status} {exception.type} {exception.note}" $a $b $c
