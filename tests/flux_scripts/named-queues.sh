#!/bin/sh
# Named queues (debug on node[0-1], batch on node[2-3]) as an admin script
# drives them under Flux 0.88, unchanged. Job ids are masked as ID,
# timestamps as T; ESC is shown as ~. The instance is started with
# `-c conf` (named-queues.conf: [[resource.config]] and the queues, in TOML).
mask() { sed -e 's/ƒ[1-9A-HJ-NP-Za-km-z]\{4,\}/ID/g' -e 's/^[0-9]*\.[0-9]* /T /' | tr '\033' '~'; }
run() { { echo "\$ flux $*"; flux "$@" 2>&1; echo "[exit $?]"; } | mask; }
RD=--setattr=exec.test.run_duration

run resource list
run resource list -q debug
run resource list -q nope
run resource info
run queue list
run queue status -v
run queue status nope
run queue list -q debug,batch -n
run queue list -q nope
run submit $RD=1s true
run run $RD=1s true
run submit --queue=nope $RD=1s true
j1=$(flux submit -q debug $RD=300s true)
run jobs
run queue start
run queue start nope
run queue start debug
run queue start --all
run queue list
j2=$(flux submit -q batch $RD=300s true)
j3=$(flux submit -q debug -N2 $RD=300s true)
jn3=$(flux submit -q debug -N3 $RD=1s true)
jrq=$(flux submit -q batch --requires=debug $RD=1s true)
run jobs -a -o "{id.f58} {queue} {state} {ranks}"
run queue status -v
run queue disable -m "debug nodes being replaced" debug
run queue status
run submit -q debug $RD=1s true
run run -q debug $RD=1s true
run queue disable
run queue disable --all
run submit -q batch $RD=1s true
run queue enable --all
run queue disable -v debug
run queue enable debug
run queue stop -m "draining for maintenance" batch
run queue status batch
run queue stop --all -m "all stopped"
run queue status -v
run queue start --all
run queue idle -t 0.5s
run job eventlog $jn3
jh=$(flux submit -q debug --urgency=hold $RD=1s true)
run update $jh queue=batch
run update $jh queue=batch
run update $jh queue=nope
run update $jh queue=debug
run update -v $jh queue=debug
run update --dry-run $jh queue=debug
run job eventlog $jh
run update $j1 queue=batch
run update $j3 queue=batch
run update $j3 queue=batch duration=1m
run update $j3 queue=debug
jc=$(flux submit -q batch -N1 --urgency=hold --requires=rank:2 $RD=1s true)
run update $jc queue=debug
run update f1234 queue=batch
run job eventlog $jn3
run job eventlog $jrq
run cancel --all
run jobs -no "{queue} {status} {result} {ranks} {exception.type}" $j3 $jn3 $jrq
run queue idle -t 10s
run queue drain -t 10s
run queue list -o get-config=policy
# queues come and go with the config; the resources stay as they are
load() { { cat conf/resource.toml; printf "$1"; } | run config load; }
load ''
run queue list
run jobs -a -no "{queue}"
run submit -q debug $RD=1s true
load '[queues.debug]\nrequires = "debug"\n'
load '[queues]\ndebug = 1\n'
load '[queues.debug]\npolicy.limits.duration = "xyz"\n'
load '[queues.debug]\n[queues.x]\nparent = "debug"\nrequires = ["a"]\n'
load '[queues.debug]\n[policy.jobspec.defaults.system]\nqueue = "nope"\n'
load '[queues.debug]\nfoo = 1\n'
load '[queues.x]\nparent = "nope"\n'
load '[queues.debug]\nrequires = ["debug"]\n[queues.debug.policy.limits]\nduration = "1h"\n[queues.batch]\nrequires = ["batch"]\n[queues.expedite]\nparent = "batch"\npolicy.limits.duration = "1h"\n[policy.jobspec.defaults.system]\nqueue = "batch"\n'
run queue list
run queue start --all
run queue stop batch
run queue list
run queue status
run submit -q debug -t 2h $RD=1s true
run submit -q debug -t 0 $RD=1s true
run submit -q expedite $RD=1s true
jv=$(flux submit -q expedite -t 30m $RD=1s true)
run jobs -q batch
ju=$(flux submit --urgency=hold -t 3h $RD=1s true)
run update $ju queue=debug
run update $ju queue=debug duration=30m
run job eventlog $ju
run queue start batch
run job wait-event $jv clean
run jobs -no "{id.f58} {queue} {ranks} {status}" $jv
run resource list
