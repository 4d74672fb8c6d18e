/**
 * Ed25519-signed documents (the Python ``sdckit.protocol._signing``): a signed document is
 * ``{"kind", "signer", "document", "signature"}``, the signature (base64url) over the RFC 8785
 * (JCS) bytes of ``{"kind", "signer", "document"}``. Verification keys are ``ed25519:<base64url>``,
 * pinned out of band.
 */

import { ed25519 } from "@noble/curves/ed25519.js";
import canonicalize from "canonicalize";

import { unb64url, utf8 } from "./bytes.js";
import { MalformedMessageError } from "./errors.js";

const PREFIX = "ed25519:";

/** RFC 8785 (JCS) bytes of a JSON value (the ``canonicalize`` package). */
export function canonicalJson(value: unknown): Uint8Array {
  const text = canonicalize(value);
  if (text === undefined) throw new MalformedMessageError("the value has no JSON form");
  return utf8(text);
}

/** The 32 raw bytes of an ``ed25519:<base64url>`` verification key. */
export function verifyKeyFromText(text: string): Uint8Array {
  if (typeof text !== "string" || !text.startsWith(PREFIX)) {
    throw new MalformedMessageError("a verification key is 'ed25519:<base64url>'");
  }
  const raw = unb64url(text.slice(PREFIX.length), "the verification key");
  if (raw.length !== 32) throw new MalformedMessageError("not an Ed25519 verification key (32 bytes)");
  return raw;
}

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

const isObject = (x: unknown): x is JsonObject => typeof x === "object" && x !== null && !Array.isArray(x);

/**
 * The document of ``signed`` if it is a ``kind`` document signed by ``signer`` with ``key``;
 * :class:`MalformedMessageError` otherwise (altered, re-signed, another kind or signer).
 */
export function verifyDocument(signed: unknown, key: Uint8Array, kind: string, signer: string): JsonObject {
  if (!isObject(signed)) throw new MalformedMessageError(`a signed ${kind} document is a JSON object`);
  const doc = signed["document"];
  if (signed["kind"] !== kind || signed["signer"] !== signer || !isObject(doc)) {
    throw new MalformedMessageError(`not a ${kind} document signed by the ${signer}`);
  }
  let ok = false;
  try {
    const sig = unb64url(String(signed["signature"] ?? ""), "the signature");
    ok = sig.length === 64 && ed25519.verify(sig, canonicalJson({ kind, signer, document: doc }), key);
  } catch {
    ok = false;
  }
  if (!ok) {
    throw new MalformedMessageError(
      `the ${kind} document does not carry the ${signer}'s signature: altered on the way, or signed by another key (check the pinned verification key)`,
    );
  }
  return doc;
}
