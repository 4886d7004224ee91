/**
 * tc time base and rate tables, computed as iproute2's tc_core.c does: the psched tick length
 * from /proc/net/psched, transmit times in ticks, and the 256-entry rate table (TCA_TBF_RTAB)
 * that tc sends with every TBF. The table bytes are unit-tested against what `tc` sent for the
 * same parameters (test/fixtures/netlink/tc-iproute2-requests.json).
 */

import { readTextFile } from "../../sys/file.ts";
import { TC_LINKLAYER_ETHERNET, TC_LINKLAYER_MASK, TC_RTAB_SIZE, TIME_UNITS_PER_SEC } from "../constants/pkt-sched.ts";
import type { RateSpec } from "./msg.ts";

/** Ticks per microsecond on kernels since 2.6.31 (psched ticks are 64 ns: 1000 / 64). */
export const DEFAULT_TICK_IN_USEC = 15.625;

let tickInUsec: number | undefined;

/**
 * The psched ticks per microsecond (iproute2's tick_in_usec), read once from /proc/net/psched
 * (`t2us us2t clock_res ...` in hex). Falls back to {@link DEFAULT_TICK_IN_USEC} when unreadable.
 */
export function pschedTickInUsec(): number {
  if (tickInUsec === undefined) tickInUsec = parsePsched(readPsched());
  return tickInUsec;
}

function readPsched(): string {
  try {
    return readTextFile("/proc/net/psched");
  } catch {
    return "";
  }
}

/** tick_in_usec from the text of /proc/net/psched (iproute2's tc_core_init). */
export function parsePsched(text: string): number {
  const f = text.trim().split(/\s+/).map((x) => parseInt(x, 16));
  let [t2us, us2t, clockRes] = f;
  if (t2us === undefined || us2t === undefined || clockRes === undefined || !(us2t > 0) || !(clockRes > 0)) {
    return DEFAULT_TICK_IN_USEC;
  }
  // iproute2's compatibility hack: a nanosecond clock advertises a multiplier of 1000 that means 1.
  if (clockRes === 1_000_000_000) t2us = us2t;
  return (t2us / us2t) * (clockRes / TIME_UNITS_PER_SEC);
}

/** C's conversion of a non-negative double to `unsigned int` (truncation, modulo 2^32). */
function toU32(x: number): number {
  return Number(BigInt.asUintN(32, BigInt(Math.trunc(x))));
}

/** tc_core_time2tick: microseconds (an unsigned int) to ticks. */
export function time2tick(usec: number, tick = pschedTickInUsec()): number {
  return toU32(toU32(usec) * tick);
}

/** tc_core_tick2time: ticks to microseconds. */
export function tick2time(ticks: number, tick = pschedTickInUsec()): number {
  return toU32(ticks / tick);
}

/** tc_calc_xmittime: ticks to send `size` bytes at `rate` bytes/s. */
export function xmitTime(rate: number, size: number, tick = pschedTickInUsec()): number {
  return time2tick(TIME_UNITS_PER_SEC * (size / rate), tick);
}

/**
 * iproute2's tc_calc_rtable for an Ethernet link layer with default mtu (2047 → cell_log 3) and no
 * mpu/overhead: the spec and the 1024-byte table of transmit times for (i+1) << cell_log bytes.
 */
export function calcRateTable(rateBytes: number, tick = pschedTickInUsec()): { spec: RateSpec; table: Uint8Array } {
  const mtu = 2047;
  let cellLog = 0;
  while (mtu >> cellLog > 255) cellLog++;
  const table = new Uint8Array(TC_RTAB_SIZE);
  const view = new DataView(table.buffer);
  const le = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;
  for (let i = 0; i < 256; i++) {
    view.setUint32(i * 4, xmitTime(rateBytes, (i + 1) << cellLog, tick), le);
  }
  return {
    spec: {
      cellLog,
      linklayer: TC_LINKLAYER_ETHERNET & TC_LINKLAYER_MASK,
      overhead: 0,
      cellAlign: -1,
      mpu: 0,
      rate: rateBytes >= 2 ** 32 ? 0xffffffff : rateBytes,
    },
    table,
  };
}
