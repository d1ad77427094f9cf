#!/bin/sh
# Errors of update, housekeeping, cancel, job, module, jobs and submit: each
# command's output and exit status. Every line of errors.expected is the text
# real Flux 0.88 prints for that command.
run() { echo "\$ flux $*"; flux "$@" 2>&1; echo "[exit $?]"; }
id=$(flux submit -t 2m --setattr=exec.test.run_duration=60s hostname)
run update
run update 1234
run update notajobid duration=10m
run update f123 duration=10m
run update $id duration=foo
run update $id duration=
run update $id foo=bar
run update $id name=newname
run housekeeping
run housekeeping bogus
run housekeeping kill
run housekeeping kill --all --jobid=f1
run housekeeping list -o '{foo}'
run housekeeping list -o '{id.f58'
run housekeeping list -i 'foo['
run housekeeping kill --targets=nosuchhost
run housekeeping kill --targets='foo['
run resource undrain 3
run cancel f123
run cancel
run cancel bad
run job raise -s 8 $id
run module reload sched-simple bogus-arg
run jobs -u nosuchuser
run jobs -f bogus
run job eventlog f1234
run job info f1234 jobspec
run job wait-event bad start
run job urgency $id -1
run job urgency $id bogus
run bogus
run submit -N0 true
run submit -t foo true
run submit --cc=foo true
run submit --flags=bogus true
run submit
