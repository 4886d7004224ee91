/**
 * The public face of shared/cni/: what the rest of the tree uses of it. Every file not re-exported
 * here is private to the package; other packages import the modules named here, never this file
 * (build/lint-layers.ts).
 */
export { parseCniArgs, parseCniArgsLenient } from "./args.ts";
export { CallEndedError, PROCESS_SCOPE, throwIfEnded } from "./call-scope.ts";
export { resolveContainerMac, runtimeContainerMac } from "./container-mac.ts";
export { openContainerNetns, openNetnsForDel } from "./container-netns.ts";
export { ConfigTypeError, decode, getField, isObject, jsonKind, t } from "./decode.ts";
export type { Infer, Schema } from "./decode.ts";
export { withDelegate } from "./delegate.ts";
export { CniError, InternalError, InvalidConfigError, messageOf, PluginUnavailableError, PluginUnavailableLimitedError, toErrorJson, TryAgainLaterError, UnsupportedFieldError } from "./errors.ts";
export { GoDurationError, parseGoDuration } from "./go-duration.ts";
export { goQuote, goUnquote } from "./go-quote.ts";
export { delegateToIpam, IPAM_STEP, ipamStep } from "./ipam-delegation.ts";
export { GC_ATTACHMENT_KEYS, gcAttachmentList, ipamTypeOf, lenientForDel, loadNetConf, netConfFields, validAttachmentsOf } from "./netconf.ts";
export { prevResultFrom } from "./result/prevresult.ts";
export type { LoadOptions } from "./netconf.ts";
export { goJsonString } from "./result/go-json.ts";
export { dnsFromWire, dnsSchema, ipField, routeFromWire, routeSchema } from "./result/common.ts";
export { formatResult } from "./result/format.ts";
export { canonicalCIDR } from "./result/ip-text.ts";
export type { CanonicalCIDR } from "./result/ip-text.ts";
export { parsePrevResult, prevResultOf } from "./result/prevresult.ts";
export { formatError } from "./skel.ts";
export type { PluginIO } from "./types.ts";
export { writeAllSync } from "./stdio.ts";
export { printAsIs } from "./types.ts";
export type { CallScope, CmdArgs, DNS, Interface, IPConfig, PluginSpec, Result, Route, ValidAttachment } from "./types.ts";
export { ALL_VERSIONS, parseVersion, resultFamily, versionGte, versionsFrom, versionText } from "./version.ts";
