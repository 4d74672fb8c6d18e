/**
 * HPKE (RFC 9180) sealing with ``@hpke/core``: suite "x25519" = DHKEM(X25519, HKDF-SHA256),
 * HKDF-SHA256, ChaCha20-Poly1305 (ids 0x0020, 0x0001, 0x0003), base mode, single shot; a
 * ciphertext is ``enc (32) || AEAD ciphertext`` as in the Python ``sdckit.protocol._crypto``.
 *
 * The hybrid suite "mlkem768-x25519" is not in the SDK: a collection that uses it is refused
 * with :class:`ParameterError` before anything is sent.
 */

import { Chacha20Poly1305 } from "@hpke/chacha20poly1305";
import { CipherSuite, HkdfSha256 } from "@hpke/core";
import { DhkemX25519HkdfSha256 } from "@hpke/dhkem-x25519";

import { concat, unb64url, utf8 } from "./bytes.js";
import { MalformedMessageError, ParameterError } from "./errors.js";

export const PROTOCOL_LABEL = "sdckit/shuffle-protocol/v1";
export const ENC_LENGTH = 32;
export const AEAD_TAG = 16;
export type Recipient = "shuffler" | "curator" | "analyst";

let suiteInstance: CipherSuite | undefined;
function suite(): CipherSuite {
  suiteInstance ??= new CipherSuite({
    kem: new DhkemX25519HkdfSha256(),
    kdf: new HkdfSha256(),
    aead: new Chacha20Poly1305(),
  });
  return suiteInstance;
}

/** ``sdckit/shuffle-protocol/v1|<collection>|round=<r>|to=<recipient>`` (UTF-8). */
export function infoLabel(collection: string, round: number, recipient: Recipient, planSha256?: string): Uint8Array {
  // round 2's outer layer carries the plan's hash (issue 37): a row for another plan does not open
  const plan = planSha256 === undefined ? "" : `|plan=${planSha256}`;
  return utf8(`${PROTOCOL_LABEL}|${collection}|round=${round}|to=${recipient}${plan}`);
}

/** Bytes of a sealed ``plaintextLength``-byte plaintext. */
export const sealedLength = (plaintextLength: number): number => ENC_LENGTH + plaintextLength + AEAD_TAG;

function checkSuite(name: string): void {
  if (name === "mlkem768-x25519") {
    throw new ParameterError(
      "this collection uses the hybrid suite mlkem768-x25519, which the JavaScript SDK does not implement; use the Python Client, or a collection with suite x25519",
    );
  }
  if (name !== "x25519") throw new ParameterError(`unknown HPKE suite ${JSON.stringify(name)}; the SDK seals with x25519`);
}

/** A recipient's X25519 public key from its text form ``x25519:<base64url of 32 bytes>``. */
export class PublicKey {
  private constructor(
    readonly raw: Uint8Array,
    readonly text: string,
  ) {}

  static fromText(text: string): PublicKey {
    const at = typeof text === "string" ? text.indexOf(":") : -1;
    if (at < 0) throw new MalformedMessageError("a public key must be '<suite>:<base64url bytes>'");
    checkSuite(text.slice(0, at));
    const raw = unb64url(text.slice(at + 1), "the public key");
    if (raw.length !== 32) throw new MalformedMessageError(`not an x25519 public key: ${raw.length} bytes`);
    return new PublicKey(raw, text);
  }
}

function buf(u: Uint8Array): ArrayBuffer {
  return u.buffer.slice(u.byteOffset, u.byteOffset + u.byteLength) as ArrayBuffer;
}

/** HPKE base-mode seal: ``enc || ciphertext``; randomised (a fresh ephemeral key per call). */
export async function seal(key: PublicKey, plaintext: Uint8Array, info: Uint8Array): Promise<Uint8Array> {
  const s = suite();
  const recipientPublicKey = await s.kem.deserializePublicKey(buf(key.raw));
  const { ct, enc } = await s.seal({ recipientPublicKey, info: buf(info) }, buf(plaintext));
  return concat(new Uint8Array(enc), new Uint8Array(ct));
}

/** Inverse of :func:`seal` with the recipient's 32-byte X25519 secret (tests and test vectors). */
export async function openSealed(secret: Uint8Array, ciphertext: Uint8Array, info: Uint8Array): Promise<Uint8Array> {
  if (ciphertext.length < ENC_LENGTH + AEAD_TAG) throw new MalformedMessageError("ciphertext too short");
  const s = suite();
  const recipientKey = await s.kem.deserializePrivateKey(buf(secret));
  try {
    const pt = await s.open(
      { recipientKey, enc: buf(ciphertext.subarray(0, ENC_LENGTH)), info: buf(info) },
      buf(ciphertext.subarray(ENC_LENGTH)),
    );
    return new Uint8Array(pt);
  } catch {
    throw new MalformedMessageError("ciphertext does not open: truncated, altered, sealed to another key or for another round");
  }
}
