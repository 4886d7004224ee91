/**
 * The public face of shared/ipam/: what the rest of the tree uses of it. Every file not re-exported
 * here is private to the package; other packages import the modules named here, never this file
 * (build/lint-layers.ts).
 */
export { allocatedIn, AllocationError, exhaustedError, iterateCandidates, requestedRange, requestedTakenError } from "./candidates.ts";
export type { AllocatedIP, Candidate } from "./candidates.ts";
export { allocatorIpamFields, allocatorNetFields, goStruct, loadAllocatorConfig, pathField } from "./config.ts";
export type { AllocatorConfig } from "./config.ts";
export { allocatableInSet, hasFreeAddress, rangeUsage, reportRangeUsage } from "./free.ts";
export type { RangeUsage } from "./free.ts";
export { goTrimSpace } from "./go-strings.ts";
export { formatRangeSet, rangeFor, rangeSetContains } from "./range-set.ts";
export type { RangeSet } from "./range-set.ts";
export { planRequests, rangeSetFailure, resultFrame, unmatchedError, withAddresses } from "./result.ts";
