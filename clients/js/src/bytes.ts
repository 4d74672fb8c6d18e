/** Byte helpers: base64url (with or without padding), UTF-8, concatenation. */

import { MalformedMessageError } from "./errors.js";

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** base64url of ``raw``; ``pad`` keeps the ``=`` padding (Python's ``urlsafe_b64encode``). */
export function b64url(raw: Uint8Array, pad = false): string {
  let out = "";
  for (let i = 0; i < raw.length; i += 3) {
    const n = (raw[i]! << 16) | ((raw[i + 1] ?? 0) << 8) | (raw[i + 2] ?? 0);
    const chars = Math.min(4, Math.ceil(((raw.length - i) * 8) / 6));
    for (let j = 0; j < chars; j++) out += B64[(n >> (18 - 6 * j)) & 63];
  }
  return pad ? out + "=".repeat((4 - (out.length % 4)) % 4) : out;
}

/** Inverse of :func:`b64url` (padding optional; the standard alphabet's ``+/`` also read). */
export function unb64url(text: string, what = "a field"): Uint8Array {
  if (typeof text !== "string") throw new MalformedMessageError(`${what} is not base64url text`);
  const s = text.replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  if (!/^[A-Za-z0-9_-]*$/.test(s) || s.length % 4 === 1) throw new MalformedMessageError(`${what} is not base64url`);
  const out = new Uint8Array(Math.floor((s.length * 6) / 8));
  let bits = 0;
  let acc = 0;
  let k = 0;
  for (const c of s) {
    acc = (acc << 6) | B64.indexOf(c);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[k++] = (acc >> bits) & 0xff;
    }
  }
  return out;
}

export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}

export function toHex(raw: Uint8Array): string {
  return Array.from(raw, (b) => b.toString(16).padStart(2, "0")).join("");
}

export function fromHex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** ``count`` bytes from the platform CSPRNG (WebCrypto ``getRandomValues``). */
export function randomBytes(count: number): Uint8Array {
  const out = new Uint8Array(count);
  globalThis.crypto.getRandomValues(out);
  return out;
}
