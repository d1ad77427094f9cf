# ion-resource transcript 2: reservations, update, partial-cancel, usage errors
x() { echo "\$ $*"; "$@" 2>&1; echo "[rc=$?]"; }
flux module remove sched-fluxion-qmanager
flux module remove sched-fluxion-feasibility
flux module remove sched-fluxion-resource
x flux ion-resource info 1
x flux ion-resource params
flux module load sched-fluxion-resource policy=${POLICY:-first}
flux run --dry-run -N4 -n8 -t 1h hostname > all.json
flux run --dry-run -N1 -n1 -t 1h hostname > n1.json
flux run --dry-run -N2 -n2 -t 100 hostname > n2.json
x flux ion-resource match allocate all.json
x flux ion-resource match allocate_orelse_reserve n1.json
x flux ion-resource match allocate_orelse_reserve n2.json
x flux ion-resource info 1
x flux ion-resource info 2
x flux ion-resource find sched-future=reserved
x flux ion-resource find jobid-reserved=2
x flux ion-resource find jobid-span=2
x flux ion-resource find jobid-span=0
x flux ion-resource find jobid-tag=0
x flux ion-resource find "sched-now=allocated and sched-future=reserved"
x flux ion-resource find "names=node[1-2]"
x flux ion-resource find "agfilter=true"
x flux ion-resource cancel 0
flux ion-resource match allocate n2.json | awk "NR==5{ print; }" > R3
cat R3
x flux ion-resource update R3 3
x flux ion-resource update R3 77
flux ion-resource match allocate n1.json | awk "NR==5{ print; }" > R4
x flux ion-resource update R4 3
flux R encode -r 1 -c 1 -H node1 > part.json
cat part.json
x flux ion-resource partial-cancel 3 part.json
x flux ion-resource info 3
x flux ion-resource find jobid-alloc=3
x flux ion-resource partial-cancel 3 R3
x flux ion-resource info 3
x flux ion-resource info ƒ2
x flux ion-resource info xyz
x flux ion-resource info
x flux ion-resource
x flux ion-resource match
x flux ion-resource bogus
x flux ion-resource find
x flux ion-resource ns-info a b c
x flux ion-resource get-property /cluster0
x flux ion-resource set-property /cluster0
echo '{' > bad.json
x flux ion-resource update bad.json 5
x flux ion-resource partial-cancel 5 bad.json
x flux ion-resource update nonexist.json 5
x flux ion-resource match allocate /tmp
