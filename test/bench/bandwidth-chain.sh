#!/usr/bin/env bash
# ADD/DEL medians of the chain bridge+host-local → bandwidth for our plugins and the Go reference
# in one run, isolated in a private mount + network namespace (named netns and bridges made here
# never reach the real host). Times only the plugin processes, invoked as a runtime does (env +
# JSON on stdin). Prints per implementation and scenario: the chain's median ADD/DEL ms and the
# bandwidth step's own median ADD/DEL ms.
# Usage: test/bench/bandwidth-chain.sh [ROUNDS]   (CNI_BENCH_OURS, CNI_BENCH_GO: plugin dirs)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-15}
OURS=${CNI_BENCH_OURS:-$PWD/dist/bin}
GO=${CNI_BENCH_GO:-/usr/lib/cni}
if [ "${BW_BENCH_INNER:-}" != 1 ]; then
  exec unshare -m -n env BW_BENCH_INNER=1 bash "$0" "$@"
fi
mount --make-rprivate /
mkdir -p /run/netns && mount -t tmpfs tmpfs /run/netns
ip link set lo up

TAG=bwb$$; STATE=/tmp/$TAG; mkdir -p "$STATE"
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
conf() { # file name type extra-json
  echo "{\"cniVersion\":\"1.0.0\",\"name\":\"$2\",\"type\":\"$3\"$4}" > "$1"
}
scenario() { # impl dir label bandwidth-extra-json
  local impl=$1 dir=$2 label=$3 extra=$4 i
  : > "$STATE/add"; : > "$STATE/del"; : > "$STATE/bwadd"; : > "$STATE/bwdel"
  conf "$STATE/br.json" "$TAG-net" bridge ',"bridge":"'$TAG'br","isGateway":true,"ipam":{"type":"host-local","subnet":"10.254.0.0/16","dataDir":"'$STATE'/ipam"}'
  conf "$STATE/bw.json" "$TAG-net" bandwidth ',"ingressRate":8000000,"ingressBurst":80000,"egressRate":8000000,"egressBurst":80000'"$extra"
  for i in $(seq 1 "$ROUNDS"); do
    local ns=$TAG-n$i
    ip netns add "$ns"
    invoke "$dir" ADD bridge "$ns" "$STATE/br.json"; local a1=$T
    jq -c --slurpfile r "$STATE/out" '. + {prevResult: $r[0]}' "$STATE/bw.json" > "$STATE/bw.prev"
    invoke "$dir" ADD bandwidth "$ns" "$STATE/bw.prev"; local a2=$T
    cp "$STATE/out" "$STATE/res"
    jq -c --slurpfile r "$STATE/res" '. + {prevResult: $r[0]}' "$STATE/bw.json" > "$STATE/bw.prev"
    invoke "$dir" DEL bandwidth "$ns" "$STATE/bw.prev"; local d2=$T
    invoke "$dir" DEL bridge "$ns" "$STATE/br.json"; local d1=$T
    echo $((a1 + a2)) >> "$STATE/add"; echo $((d1 + d2)) >> "$STATE/del"
    echo "$a2" >> "$STATE/bwadd"; echo "$d2" >> "$STATE/bwdel"
    ip netns del "$ns"
  done
  printf '%-6s %-34s chain add_ms=%s del_ms=%s | bandwidth add_ms=%s del_ms=%s n=%s\n' "$impl" "$label" \
    "$(median < "$STATE/add")" "$(median < "$STATE/del")" "$(median < "$STATE/bwadd")" "$(median < "$STATE/bwdel")" "$(wc -l < "$STATE/add")"
}
for impl in "ours:$OURS" "go:$GO"; do
  echo "== ${impl%%:*} (${impl#*:}); VERSION startup $(s=$(now); for _ in 1 2 3 4 5 6 7 8 9 10; do echo '{"cniVersion":"1.0.0"}' | CNI_COMMAND=VERSION "${impl#*:}/bandwidth" > /dev/null; done; echo "scale=1; ($(now) - $s) / 10000000" | bc) ms"
  scenario "${impl%%:*}" "${impl#*:}" "bridge+host-local → bandwidth" ''
  # the Go 1.1.1 plugin does not know the key (it shapes everything with TBF): timed for comparison only
  scenario "${impl%%:*}" "${impl#*:}" "… with unshapedSubnets (2 prefixes)" ',"unshapedSubnets":["10.99.0.0/16","2001:db8::/32"]'
done
ip link del "${TAG}br" 2>/dev/null || true
