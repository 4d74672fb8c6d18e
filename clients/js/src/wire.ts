/**
 * The wire format (docs/protocol.md, "Wire format"; the Python ``sdckit.protocol._wire``).
 *
 * Inner plaintext, exactly ``padLength`` bytes:
 * ``version (1, = 1) | kind (1: 1 feature, 2 row, 3 pair) | salt (16) | body length (2, big-endian)
 * | body (UTF-8 JSON) | zero bytes``. A batch: ``"SDCB" | version (1) | count (4) | count x
 * (length (4) | bytes)``, big-endian.
 */

import { concat, utf8 } from "./bytes.js";
import { MalformedMessageError, ParameterError } from "./errors.js";
import { encodeValue, jsonString, type Value } from "./values.js";

export const WIRE_VERSION = 1;
export const SALT_LENGTH = 16;
export const HEADER_LENGTH = 20;
export const KIND_FEATURE = 1;
export const KIND_ROW = 2;
export const KIND_PAIR = 3;
const MAGIC = utf8("SDCB");

function pad(kind: number, salt: Uint8Array, body: Uint8Array, padLength: number, what: string): Uint8Array {
  const need = HEADER_LENGTH + body.length;
  if (need > padLength) {
    throw new ParameterError(
      `${what} needs ${need} bytes but messages are padded to ${padLength}; raise the collection's pad length to at least ${need}`,
    );
  }
  if (salt.length !== SALT_LENGTH) throw new ParameterError(`a salt has ${SALT_LENGTH} bytes, got ${salt.length}`);
  const out = new Uint8Array(padLength);
  out[0] = WIRE_VERSION;
  out[1] = kind;
  out.set(salt, 2);
  new DataView(out.buffer).setUint16(18, body.length);
  out.set(body, HEADER_LENGTH);
  return out;
}

/** The round-1 body ``["<feature>", value]``. */
export function featureBody(feature: string, value: Value): Uint8Array {
  return utf8(`[${jsonString(feature)},${encodeValue(value)}]`);
}

/** The round-2 and pair-round body ``[["<column>", value], ...]``. */
export function rowBody(columns: readonly string[], values: readonly Value[]): Uint8Array {
  if (columns.length !== values.length) throw new ParameterError("as many values as columns");
  return utf8(`[${columns.map((c, i) => `[${jsonString(c)},${encodeValue(values[i]!)}]`).join(",")}]`);
}

/** Round-1 inner plaintext of ``padLength`` bytes for one feature's value. */
export function packFeature(feature: string, value: Value, salt: Uint8Array, padLength: number): Uint8Array {
  return pad(KIND_FEATURE, salt, featureBody(feature, value), padLength, `feature ${JSON.stringify(feature)} with its value`);
}

/** Round-2 (or, with ``kind = KIND_PAIR``, pair-round) inner plaintext of ``padLength`` bytes. */
export function packRow(
  columns: readonly string[],
  values: readonly Value[],
  salt: Uint8Array,
  padLength: number,
  kind: number = KIND_ROW,
): Uint8Array {
  return pad(kind, salt, rowBody(columns, values), padLength, `a row of ${columns.length} column(s)`);
}

/** Frame ciphertexts into one request body. */
export function packBatch(messages: readonly Uint8Array[]): Uint8Array {
  const parts: Uint8Array[] = [];
  const head = new Uint8Array(9);
  head.set(MAGIC, 0);
  head[4] = WIRE_VERSION;
  new DataView(head.buffer).setUint32(5, messages.length);
  parts.push(head);
  for (const m of messages) {
    const len = new Uint8Array(4);
    new DataView(len.buffer).setUint32(0, m.length);
    parts.push(len, m);
  }
  return concat(...parts);
}

/** Inverse of :func:`packBatch`; :class:`MalformedMessageError` for a bad or truncated frame. */
export function unpackBatch(body: Uint8Array): Uint8Array[] {
  if (body.length < 9) throw new MalformedMessageError("batch shorter than its header");
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  if (!MAGIC.every((b, i) => body[i] === b) || body[4] !== WIRE_VERSION) {
    throw new MalformedMessageError("not an sdckit batch (magic 'SDCB', version 1)");
  }
  const count = view.getUint32(5);
  const out: Uint8Array[] = [];
  let pos = 9;
  for (let i = 0; i < count; i++) {
    if (pos + 4 > body.length) throw new MalformedMessageError("batch truncated inside a length field");
    const n = view.getUint32(pos);
    pos += 4;
    if (pos + n > body.length) throw new MalformedMessageError("batch truncated inside a message");
    out.push(body.slice(pos, pos + n));
    pos += n;
  }
  if (pos !== body.length) throw new MalformedMessageError("trailing bytes after the last message of the batch");
  return out;
}
