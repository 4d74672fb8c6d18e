/** The sdckit shuffle-protocol device SDK (docs/protocol.md, "A browser or app device: the SDK"). */

export * from "./bounds.js";
export * from "./bytes.js";
export * from "./client.js";
export { ENROL_ROUNDS, Enrolment, NONCE_LENGTH, SUITE as VOPRF_SUITE, tokenInput } from "./enrol.js";
export * from "./errors.js";
export * from "./hpke.js";
export * from "./signing.js";
export * from "./values.js";
export * from "./wire.js";
