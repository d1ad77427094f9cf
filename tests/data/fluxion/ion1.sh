# ion-resource transcript: 4 nodes node[0-3], 2 cores each; resource module alone
x() { echo "\$ $*"; "$@" 2>&1; echo "[rc=$?]"; }
flux module remove sched-fluxion-qmanager
flux module remove sched-fluxion-feasibility
flux module remove sched-fluxion-resource
flux module load sched-fluxion-resource policy=${POLICY:-first}
flux module load sched-fluxion-feasibility
flux run --dry-run -N1 -n1 -t 1h hostname > n1.json
flux run --dry-run -N1 -n2 -t 1h hostname > n1c2.json
flux run --dry-run -N2 -n2 -t 30m hostname > n2.json
flux run --dry-run -N5 -n5 -t 30m hostname > n5.json
flux run --dry-run -n3 -t 10 hostname > c3.json
echo 'version: [' > bad.yaml
x flux ion-resource params
x flux ion-resource match allocate n1.json
x flux ion-resource match allocate n1c2.json
x flux ion-resource match allocate n2.json
x flux ion-resource info 0
x flux ion-resource info 1
x flux ion-resource info 99
x flux ion-resource match without_allocating c3.json
x flux ion-resource match allocate_orelse_reserve n2.json
x flux ion-resource match without_allocating_future n2.json
x flux ion-resource match allocate n2.json
x flux ion-resource match allocate_with_satisfiability n2.json
x flux ion-resource match allocate_with_satisfiability n5.json
x flux ion-resource match allocate n5.json
x flux ion-resource match satisfiability n1.json
x flux ion-resource match satisfiability n5.json
x flux ion-resource match allocate bad.yaml
x flux ion-resource match allocate nonexistent.json
x flux ion-resource info 3
x flux ion-resource find status=up
x flux ion-resource find sched-now=allocated
x flux ion-resource find -q sched-now=free
x flux ion-resource find "sched-future=reserved"
x flux ion-resource find "sched-now=allocated and status=up"
x flux ion-resource find "sched-now=free or sched-future=reserved"
x flux ion-resource find "jobid-alloc=1"
x flux ion-resource find "jobid-reserved=3"
x flux ion-resource find "jobid-span=3"
x flux ion-resource find "(status=up and sched-now=free) or jobid-alloc=0"
x flux ion-resource find "status=bogus"
x flux ion-resource find "nokey=1"
x flux ion-resource find "status=down"
x flux ion-resource find --format=rv1 "jobid-alloc=0"
x flux ion-resource status
x flux ion-resource set-status /cluster0/node1 down
x flux ion-resource set-status /cluster0/node9 down
x flux ion-resource set-status /cluster0/node1 sideways
x flux ion-resource find status=down
x flux ion-resource status
x flux ion-resource set-status /cluster0/node1/core0 up
x flux ion-resource set-status /cluster0/node1 up
x flux ion-resource set-status /cluster0/node2/core1 down
x flux ion-resource find status=down
x flux ion-resource set-status /cluster0/node2/core1 up
x flux ion-resource set-property /cluster0/node2 foo=bar
x flux ion-resource set-property /cluster0/node2 /cluster0/node3/core0 color=red
x flux ion-resource get-property /cluster0/node2 foo
x flux ion-resource get-property /cluster0/node3/core0 color
x flux ion-resource get-property /cluster0/node3 color
x flux ion-resource get-property /cluster0/node7 color
x flux ion-resource set-property /cluster0/node2 noequals
x flux ion-resource set-property /cluster0/node2 =x
x flux ion-resource set-property /cluster0/node2 x=
x flux ion-resource set-property /cluster0/node2 /cluster0/nodeX a=b
x flux ion-resource find property=foo
x flux ion-resource find property=color
x flux ion-resource match allocate n1.json
x flux ion-resource remove-property /cluster0/node2 foo
x flux ion-resource get-property /cluster0/node2 foo
x flux ion-resource remove-property /cluster0/nodeZ foo
x flux ion-resource ns-info 0 core 0
x flux ion-resource ns-info 0 core 9
x flux ion-resource ns-info 0 node 0
x flux ion-resource cancel 1
x flux ion-resource cancel 1
x flux ion-resource info 1
x flux ion-resource stats
x flux ion-resource stats-cancel
x flux ion-resource stats
