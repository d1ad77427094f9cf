#!/bin/sh
# A maintenance round as an admin scripts it: check the instance's R, run a
# few quick jobs (output to files named by job id), attach to them, drain a
# node for repair and read the resource and job eventlogs back.
# admin.expected is what real Flux 0.88 printed for it
# (flux start --test-size=4 ./admin.sh, on a machine of 2 cores).
# Job ids, host names and timestamps vary: they are masked.
mask() {
    sed -e 's/ƒ[1-9A-HJ-NP-Za-km-z]\{4,\}/ID/g' -e 's/[0-9]\{10\}\.[0-9]\{1,\}/TS/g' \
        -e 's/node[0-9]/HOST/g' -e 's/\bvm\b/HOST/g'
}

echo "== R"
flux kvs get resource.R | flux R decode --short
flux kvs get resource.R | flux R decode --count=node
flux kvs get resource.R | flux R decode --count=core

echo "== quick jobs"
flux run -N2 -n2 -l hostname | mask
flux run -n2 -l echo hello | sort
flux run sh -c 'echo about to fail; exit 3'; echo "exit $?"
echo "first line" | flux run cat

echo "== output files"
id=$(flux submit -n2 -l --output=out-{{id}}.log printenv FLUX_TASK_RANK)
flux job attach $id 2>&1 | mask; echo "attach exit $?"
sort "out-$id.log"
id2=$(flux submit --job-name=fails false)
flux job attach $id2; echo "attach exit $?"

echo "== a job that hangs"
id3=$(flux submit --job-name=stuck sleep inf)
flux job wait-event $id3 start >/dev/null
flux job kill $id3
flux job attach $id3; echo "attach exit $?"

echo "== job list"
flux job list -s inactive | python3 -c '
import json, sys
for line in sys.stdin:
    j = json.loads(line)
    print(j["name"], j["state"], j["result"], j["ntasks"], j["nnodes"], j["waitstatus"], j.get("returncode"))'

echo "== drain for repair"
flux resource drain 3 "bad DIMM"
flux resource status -s drain -o "{state} {nnodes} {reason}"
flux resource eventlog | mask | tail -1
flux resource undrain 3
flux resource eventlog | mask | tail -1

echo "== kvs eventlog"
flux kvs eventlog get $(flux job id --to=kvs $id2).eventlog | cut -d' ' -f2- | mask
