/** Build-time constants; `CNI_BUILD_VERSION` is replaced by `bun build --define`. */
declare const CNI_BUILD_VERSION: string | undefined;

/** The version string shown in about text (upstream prints "version unknown" when unset). */
export function buildVersion(): string {
  return typeof CNI_BUILD_VERSION === "string" && CNI_BUILD_VERSION !== "" ? CNI_BUILD_VERSION : "version unknown";
}

declare const CNI_BUILD_ID: string | undefined;

/**
 * The identity of this build, shared with the exec shim built with it (both get the same value from
 * `make build`): the agent serves only shims of its own build. "" when not built by make.
 */
export function buildId(): string {
  return typeof CNI_BUILD_ID === "string" ? CNI_BUILD_ID : "";
}
