/**
 * The public face of shared/error/: what the rest of the tree uses of it. Every file not re-exported
 * here is private to the package; other packages import the modules named here, never this file
 * (build/lint-layers.ts).
 */
export { annotate, annotateError, causeChain, messageOf } from "./annotate.ts";
