#!/usr/bin/env bash
# Fails when an x86-64 executable's code needs more than x86-64-v2 (SSE4.2, SSSE3, POPCNT,
# CMPXCHG16B): the check `make build` runs on the amd64 executable, whose runtime
# build/bun-runtime.sh pins to Bun's baseline build.
#
# How: disassemble .text and measure two shares of all instructions.
#   VEX    instructions with a VEX or EVEX encoding (AVX, AVX2, FMA, F16C, AVX-512: mnemonics
#          starting with "v", less VERR/VERW)
#   v3-int the x86-64-v3 scalar extensions: BMI1 (andn bextr blsi blsmsk blsr), BMI2 (bzhi mulx pdep
#          pext rorx sarx shlx shrx), LZCNT and MOVBE
# A compiler targeting x86-64-v3 (Haswell) uses them all through ordinary code: every variable shift
# becomes shlx/sarx/shrx, every vector move a VEX form. A baseline compile has them only in
# functions that run after a CPU check chose them (hand-written SIMD: string search, UTF-8, crypto,
# compression), a small and stable share. TZCNT is not counted: it decodes as BSF on older CPUs and
# compilers emit it for x86-64-v1 where both give the same answer.
#
# Measured with Bun's runtimes (instructions in .text; VEX share; v3-int share):
#   bun-linux-x64 1.3.0 (needs AVX2)         15.1 M   3.11 %    0.184 %   -> fails
#   bun-linux-x64-baseline 1.3.0             15.1 M   0.16 %    0.014 %   -> passes
#   bun-linux-x64-baseline 1.4.5             20.2 M   0.25 %    0.014 %   -> passes
# The limits sit between them, several times away from each: VEX <= 1 %, v3-int <= 0.05 %.
#
# A verdict is kept in node_modules/.cache/x86-64-v2 under the SHA-256 of the .text section, so an
# unchanged runtime is disassembled once (the bundle a build appends is not in .text); --no-cache
# always disassembles. The .text is split in as many address ranges as there are CPUs.
#
# Usage: build/check-x86-64-v2.sh [--no-cache] EXECUTABLE
set -euo pipefail
CACHE=1
if [[ ${1:-} == --no-cache ]]; then CACHE=0; shift; fi
EXE=${1:?usage: build/check-x86-64-v2.sh [--no-cache] EXECUTABLE}
VEX_LIMIT_PPM=10000   # 1 %
V3INT_LIMIT_PPM=500   # 0.05 %
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

machine=$(LC_ALL=C readelf -hW "$EXE" | sed -n 's/^ *Machine: *//p')
[[ $machine == "Advanced Micro Devices X86-64" ]] || { echo "check-x86-64-v2: $EXE is not an x86-64 executable (Machine: ${machine:-unknown})" >&2; exit 1; }
# .text: "[Nr] Name Type Address Off Size ..." -> address and size, hex
read -r text_addr text_size < <(LC_ALL=C readelf -SW "$EXE" | awk '$2 == ".text" { print $4, $6 } $3 == ".text" { print $5, $7 }' | head -1)
[[ -n ${text_addr:-} ]] || { echo "check-x86-64-v2: $EXE has no .text section" >&2; exit 1; }

stamp=""
if (( CACHE )); then
  sum=$(objcopy -O binary --only-section=.text "$EXE" /dev/stdout | sha256sum | cut -c1-64)
  stamp=$ROOT/node_modules/.cache/x86-64-v2/$sum
  if [[ -f $stamp ]]; then
    echo "check-x86-64-v2: $EXE: $(cat "$stamp") (verdict kept for this .text)"
    exit 0
  fi
fi

parts=$(nproc 2>/dev/null || echo 1)
start=$((16#$text_addr)) size=$((16#$text_size))
step=$(( (size + parts - 1) / parts ))
tmp=$(mktemp -d "${TMPDIR:-/tmp}/x86-64-v2.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for ((i = 0; i < parts; i++)); do
  from=$((start + i * step)) to=$((start + (i + 1) * step))
  (( to > start + size )) && to=$((start + size))
  objdump -d --no-show-raw-insn -j .text --start-address="$from" --stop-address="$to" "$EXE" |
    awk '$1 ~ /^[0-9a-f]+:$/ {
           n++; m = $2
           if (m ~ /^v/ && m !~ /^ver[rw]$/) vex++
           else if (m ~ /^(andn|bextr|blsi|blsmsk|blsr|bzhi|mulx|pdep|pext|rorx|sarx|shlx|shrx|lzcnt|movbe)$/) v3++
         }
         END { print n + 0, vex + 0, v3 + 0 }' > "$tmp/$i" &
done
wait
read -r total vex v3 < <(cat "$tmp"/* | awk '{ n += $1; v += $2; b += $3 } END { print n, v, b }')
(( total > 100000 )) || { echo "check-x86-64-v2: $EXE: only $total instructions disassembled; objdump failed?" >&2; exit 1; }
vex_ppm=$((vex * 1000000 / total)) v3_ppm=$((v3 * 1000000 / total))
pct() { printf '%d.%04d %%' $(($1 / 10000)) $(($1 % 10000)); }
verdict="$total instructions; VEX-encoded $vex ($(pct $vex_ppm), limit $(pct $VEX_LIMIT_PPM)); BMI/LZCNT/MOVBE $v3 ($(pct $v3_ppm), limit $(pct $V3INT_LIMIT_PPM))"
if (( vex_ppm > VEX_LIMIT_PPM || v3_ppm > V3INT_LIMIT_PPM )); then
  echo "check-x86-64-v2: $EXE needs more than x86-64-v2: $verdict. Its code was compiled for x86-64-v3 (AVX2/BMI2) and dies with SIGILL on older CPUs; build with the baseline runtime (build/bun-runtime.sh bun-linux-x64-baseline)." >&2
  exit 1
fi
if [[ -n $stamp ]]; then
  mkdir -p "$(dirname "$stamp")"
  echo "$verdict" > "$stamp"
fi
echo "check-x86-64-v2: $EXE: $verdict"
