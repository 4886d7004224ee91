/**
 * The TBF numbers exactly as the Go plugin computes them (ifb_creator.go createTBF): rate and
 * burst in bytes (bits / 8, truncated), the bucket ("buffer") in psched ticks of
 * burst × 10^6 / rate microseconds, and the queue limit = the bytes sent in 25 ms at the rate +
 * burst. CHECK compares the kernel's values against these, so they must match bit for bit
 * (including Go's float64 → uint32 truncations).
 */
import { pschedTickInUsec } from "../../shared/netlink/tc/rate-table.ts";
import type { Limit } from "./config.ts";

/** Upstream latencyInMillis. */
export const LATENCY_MS = 25;
const TIME_UNITS_PER_SEC = 1_000_000;

/** Go's uint32(float64): truncation (values here are always in range). */
function u32(x: number): number {
  return Math.trunc(x) >>> 0;
}

export interface TbfNumbers {
  /** bytes per second */
  rate: number;
  /** bytes */
  burst: number;
  /** psched ticks */
  buffer: number;
  /** bytes */
  limit: number;
}

/** Upstream buffer(): time2Tick(uint32(burst × 10^6 / rate)). */
export function bufferTicks(rateBytes: number, burstBytes: number, tick = pschedTickInUsec()): number {
  return u32(u32((burstBytes * TIME_UNITS_PER_SEC) / rateBytes) * tick);
}

/** Upstream limit(): uint32(rate × latency_us / 10^6) + burst (uint32 arithmetic). */
export function limitBytes(rateBytes: number, burstBytes: number): number {
  const latencyUs = TIME_UNITS_PER_SEC * (LATENCY_MS / 1000);
  return (u32((rateBytes * latencyUs) / TIME_UNITS_PER_SEC) + burstBytes) >>> 0;
}

/** All four numbers for a configured limit (bits/s, bits). */
export function tbfNumbers(l: Limit, tick = pschedTickInUsec()): TbfNumbers {
  const rate = Math.floor(l.rate / 8);
  const burst = Math.floor(l.burst / 8) >>> 0;
  return { rate, burst, buffer: bufferTicks(rate, burst, tick), limit: limitBytes(rate, burst) };
}
