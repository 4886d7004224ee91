#!/usr/bin/env bash
# Copied from ../shared/tools/cni-bench.sh (team tooling); run it through test/bench/bench-chains.sh, which
# isolates it in private mount and network namespaces.
# cni-bench.sh PLUGIN_DIR [ROUNDS] — times CNI ADD/DEL exactly as a runtime invokes plugins
# (env + JSON on stdin), for any plugin directory, so two implementations can be compared
# side by side in one run. Only the plugin processes are timed (harness work is excluded).
# Prints one line per scenario: name, median ADD ms, median DEL ms (sum over the chain).
# Uses only namespaces, links, rules and state it creates itself (prefix cb<pid>), and removes them.
set -u
DIR=$(readlink -f "${1:?plugin dir}"); ROUNDS=${2:-15}
TAG=cb$$; STATE=/tmp/$TAG; mkdir -p $STATE
BR=${TAG}br
now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END{ if(NR==0){print "nan";exit} m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f", m/1e6 }'; }
ACC=0
invoke() { # cmd plugin netns id ifname config-file; adds the plugin's own wall time to ACC
  local s=$(now)
  CNI_COMMAND=$1 CNI_CONTAINERID=$4 CNI_NETNS=${3:+/var/run/netns/$3} CNI_IFNAME=$5 CNI_PATH=$DIR \
    "$DIR/$2" < "$6" > $STATE/out 2> $STATE/err || { echo "FAIL $1 $2: $(head -c 300 $STATE/out $STATE/err)" >&2; return 1; }
  ACC=$((ACC + $(now) - s))
}
conf() { # name type extra-json -> file
  echo "{\"cniVersion\":\"1.0.0\",\"name\":\"$TAG-$1\",\"type\":\"$2\"$3}" > $STATE/$1.json
  echo $STATE/$1.json
}
with_prev() { # config-file result-file -> file with prevResult
  jq -c --slurpfile r "$2" '. + {prevResult: $r[0]}' "$1" > $1.prev
  echo $1.prev
}
scenario() { # label plugin config [chained configs...]
  local label=$1 plugin=$2 cfg=$3; shift 3
  : > $STATE/add.t; : > $STATE/del.t
  for i in $(seq 1 $ROUNDS); do
    ip netns add $TAG-n$i
    ACC=0
    invoke ADD $plugin $TAG-n$i c$i eth0 $cfg || break
    cp $STATE/out $STATE/res
    for c in "$@"; do local p=$(jq -r .type $c); local f=$(with_prev $c $STATE/res)
      invoke ADD $p $TAG-n$i c$i eth0 $f || break 2; cp $STATE/out $STATE/res; done
    local add=$ACC; ACC=0
    for c in $(printf '%s\n' "$@" | tac); do local p=$(jq -r .type $c); local f=$(with_prev $c $STATE/res)
      invoke DEL $p $TAG-n$i c$i eth0 $f || break 2; done
    invoke DEL $plugin $TAG-n$i c$i eth0 $cfg || break
    echo $add >> $STATE/add.t; echo $ACC >> $STATE/del.t
    ip netns del $TAG-n$i
  done
  ip netns del $TAG-n$i 2>/dev/null
  printf '%-28s add_ms=%s del_ms=%s n=%s\n' "$label" "$(median < $STATE/add.t)" "$(median < $STATE/del.t)" "$(wc -l < $STATE/add.t)"
}
scenario loopback loopback $(conf lo loopback '')
scenario bridge+host-local bridge $(conf br bridge ',"bridge":"'$BR'","isGateway":true,"ipam":{"type":"host-local","subnet":"10.250.0.0/16","dataDir":"'$STATE'/ipam"}')
scenario ptp+host-local ptp $(conf ptp ptp ',"ipMasq":true,"ipam":{"type":"host-local","subnet":"10.251.0.0/16","dataDir":"'$STATE'/ipam"}')
scenario bridge-chain bridge $(conf brc bridge ',"bridge":"'$BR'c","isGateway":true,"ipMasq":true,"ipam":{"type":"host-local","subnet":"10.252.0.0/16","dataDir":"'$STATE'/ipam"}') \
  $(conf pm portmap ',"capabilities":{"portMappings":true},"runtimeConfig":{"portMappings":[{"hostPort":18080,"containerPort":80,"protocol":"tcp"}]}') \
  $(conf fw firewall '') $(conf tu tuning ',"sysctl":{"net.core.somaxconn":"500"}') \
  $(conf bw bandwidth ',"ingressRate":8000000,"ingressBurst":80000,"egressRate":8000000,"egressBurst":80000')
# concurrency: N simultaneous bridge+host-local ADDs, then N simultaneous DELs
N=${CONC:-50}
for i in $(seq 1 $N); do ip netns add $TAG-p$i; done
cfg=$(conf par bridge ',"bridge":"'$BR'p","isGateway":true,"ipam":{"type":"host-local","subnet":"10.253.0.0/16","dataDir":"'$STATE'/ipam"}')
t0=$(now)
for i in $(seq 1 $N); do ( CNI_COMMAND=ADD CNI_CONTAINERID=p$i CNI_NETNS=/var/run/netns/$TAG-p$i CNI_IFNAME=eth0 CNI_PATH=$DIR "$DIR/bridge" < $cfg > $STATE/par$i.out 2>&1 ) & done; wait
t1=$(now)
for i in $(seq 1 $N); do ( CNI_COMMAND=DEL CNI_CONTAINERID=p$i CNI_NETNS=/var/run/netns/$TAG-p$i CNI_IFNAME=eth0 CNI_PATH=$DIR "$DIR/bridge" < $cfg > /dev/null 2>&1 ) & done; wait
t2=$(now)
ok=$(grep -l '"ips"' $STATE/par*.out | wc -l); uniq=$(cat $STATE/par*.out | grep -o '"address": *"[0-9./]*"' | sort -u | wc -l)
left=$(ls $STATE/ipam/$TAG-par 2>/dev/null | grep -c '^10\.' )
printf '%-28s add_all_ms=%d del_all_ms=%d ok=%s/%s unique_ips=%s leaked_ips=%s\n' "concurrent-$N" $(((t1-t0)/1000000)) $(((t2-t1)/1000000)) $ok $N $uniq $left
for i in $(seq 1 $N); do ip netns del $TAG-p$i; done
for b in $BR ${BR}c ${BR}p; do ip link del $b 2>/dev/null; done
rm -rf $STATE
