#!/usr/bin/env bash
# ADD/DEL medians of the chain bridge+host-local → tuning → bandwidth for our plugins and the Go
# reference (Debian 1.1.1) in one run (issue 5's closing note), isolated in a private mount + network
# namespace like bench-chains.sh: the named netns, bridge and IFBs made here never reach the real
# host. Times only the plugin processes, invoked as a runtime does (env + JSON on stdin, prevResult =
# the previous plugin's result on ADD, the final result on DEL, DEL in reverse order). Prints per
# implementation the chain's median ADD/DEL ms and each step's own medians.
# Usage: test/bench/meta-chain.sh [ROUNDS]   (CNI_BENCH_OURS, CNI_BENCH_GO: plugin dirs)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-15}
OURS=${CNI_BENCH_OURS:-$PWD/dist/bin}
GO=${CNI_BENCH_GO:-/usr/lib/cni}
if [ "${META_BENCH_INNER:-}" != 1 ]; then
  exec unshare -m -n env META_BENCH_INNER=1 CNI_BENCH_OURS="$OURS" CNI_BENCH_GO="$GO" bash "$0" "$@"
fi
mount --make-rprivate /
mkdir -p /run/netns && mount -t tmpfs tmpfs /run/netns
ip link set lo up

TAG=mcb$$; STATE=/tmp/$TAG; mkdir -p "$STATE"
trap 'rm -rf "$STATE"' EXIT
now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END{ if(NR==0){print "nan";exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f", m/1e6 }'; }
T=0
invoke() { # dir cmd plugin netns config-file -> $STATE/out, T = the plugin's wall time (ns)
  local s; s=$(now)
  CNI_COMMAND=$2 CNI_CONTAINERID=c-$4 CNI_NETNS=/var/run/netns/$4 CNI_IFNAME=eth0 CNI_PATH=$1 \
    "$1/$3" < "$5" > "$STATE/out" 2> "$STATE/err" || { echo "FAIL $2 $3: $(head -c 300 "$STATE/out" "$STATE/err")" >&2; return 1; }
  T=$(( $(now) - s ))
}
conf() { # file type extra-json
  echo "{\"cniVersion\":\"1.0.0\",\"name\":\"$TAG-net\",\"type\":\"$2\"$3}" > "$1"
}
with_prev() { # config result -> config.prev
  jq -c --slurpfile r "$2" '. + {prevResult: $r[0]}' "$1" > "$1.prev"
}
run_impl() { # impl dir
  local impl=$1 dir=$2 i
  for f in add del bradd brdel tuadd tudel bwadd bwdel; do : > "$STATE/$f"; done
  conf "$STATE/br.json" bridge ',"bridge":"'$TAG'br","isGateway":true,"ipam":{"type":"host-local","subnet":"10.254.0.0/16","dataDir":"'$STATE'/ipam"}'
  conf "$STATE/tu.json" tuning ',"dataDir":"'$STATE'/tuning","mtu":1400,"sysctl":{"net.core.somaxconn":"500"}'
  conf "$STATE/bw.json" bandwidth ',"ingressRate":8000000,"ingressBurst":80000,"egressRate":8000000,"egressBurst":80000'
  for i in $(seq 1 "$ROUNDS"); do
    local ns=$TAG-$impl-$i
    ip netns add "$ns"
    invoke "$dir" ADD bridge "$ns" "$STATE/br.json"; local a1=$T
    with_prev "$STATE/tu.json" "$STATE/out"
    invoke "$dir" ADD tuning "$ns" "$STATE/tu.json.prev"; local a2=$T
    with_prev "$STATE/bw.json" "$STATE/out"
    invoke "$dir" ADD bandwidth "$ns" "$STATE/bw.json.prev"; local a3=$T
    cp "$STATE/out" "$STATE/final"
    with_prev "$STATE/bw.json" "$STATE/final"; with_prev "$STATE/tu.json" "$STATE/final"; with_prev "$STATE/br.json" "$STATE/final"
    invoke "$dir" DEL bandwidth "$ns" "$STATE/bw.json.prev"; local d3=$T
    invoke "$dir" DEL tuning "$ns" "$STATE/tu.json.prev"; local d2=$T
    invoke "$dir" DEL bridge "$ns" "$STATE/br.json.prev"; local d1=$T
    echo $((a1 + a2 + a3)) >> "$STATE/add"; echo $((d1 + d2 + d3)) >> "$STATE/del"
    echo "$a1" >> "$STATE/bradd"; echo "$d1" >> "$STATE/brdel"
    echo "$a2" >> "$STATE/tuadd"; echo "$d2" >> "$STATE/tudel"
    echo "$a3" >> "$STATE/bwadd"; echo "$d3" >> "$STATE/bwdel"
    ip netns del "$ns"
  done
  printf '%-5s bridge→tuning→bandwidth  chain add_ms=%s del_ms=%s | bridge %s/%s  tuning %s/%s  bandwidth %s/%s (add/del ms)  n=%s\n' "$impl" \
    "$(median < "$STATE/add")" "$(median < "$STATE/del")" \
    "$(median < "$STATE/bradd")" "$(median < "$STATE/brdel")" "$(median < "$STATE/tuadd")" "$(median < "$STATE/tudel")" \
    "$(median < "$STATE/bwadd")" "$(median < "$STATE/bwdel")" "$(wc -l < "$STATE/add")"
}
echo "rounds=$ROUNDS cores=$(nproc) load=$(cut -d' ' -f1-3 /proc/loadavg)"
for impl in "ours:$OURS" "go:$GO"; do
  echo "== ${impl%%:*}: ${impl#*:}"
  run_impl "${impl%%:*}" "${impl#*:}"
done
ip link del "${TAG}br" 2>/dev/null || true
