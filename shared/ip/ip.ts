/**
 * Address and prefix math, pure (no I/O): re-exports {@link ./addr.ts} and {@link ./cidr.ts} so
 * callers can import everything IP-related from one place.
 */
export * from "./addr.ts";
export * from "./cidr.ts";
