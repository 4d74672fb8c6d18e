/**
 * Canonical value encoding (the Python ``sdckit.protocol.encode_value``), byte for byte: the key
 * marginals are counted by, and the form values take inside a message body.
 *
 * JavaScript has one number type where Python has two; a number is an integer (``39``) when it
 * is a safe integer, else a float (``39.5``). Wrap a whole number in :func:`float` for a float
 * value (``39.0``); a ``bigint`` is an integer of any size. Floats use Python's ``repr`` (the
 * shortest digits that round-trip, scientific below 1e-4 and from 1e16: ``1e-05``, ``1e+16``);
 * NaN and the infinities are tagged (``{"float":"nan"}``). Strings are JSON strings (control
 * characters escaped, nothing else); ``null`` and booleans as in JSON. Other types (dates,
 * decimals, bytes) have no JavaScript type that is unambiguous: pass their canonical text with
 * :func:`encoded` (for example ``encoded('{"date":"2024-01-31"}')``) or cast them to text.
 */

import { ParameterError } from "./errors.js";

/** The redaction marker a user sends instead of a value it redacts. */
export const REDACTED: unique symbol = Symbol("REDACTED");

/** A float value (Python ``float``) even when whole: ``float(39)`` encodes as ``39.0``. */
export class FloatValue {
  constructor(readonly value: number) {}
}

/** A value given by its canonical encoding (any type the Python side encodes). */
export class EncodedValue {
  constructor(readonly text: string) {}
}

export const float = (x: number): FloatValue => new FloatValue(x);
export const encoded = (text: string): EncodedValue => new EncodedValue(text);

export type Value = null | boolean | number | bigint | string | FloatValue | EncodedValue | typeof REDACTED;

/** Python ``repr`` of a finite float. */
export function pythonFloatRepr(x: number): string {
  if (x === 0) return "0.0"; // -0.0 == 0.0: one value, one encoding
  const sign = x < 0 ? "-" : "";
  // the shortest round-trip digits, as ECMAScript Number::toString gives them (the closest when
  // several are as short, as Python's repr)
  const [mant, exp = "0"] = String(Math.abs(x)).split("e");
  const [whole, frac = ""] = mant!.split(".");
  let digits = whole! + frac;
  let decpt = whole!.length + Number(exp); // value = 0.digits x 10^decpt
  const lead = digits.length - digits.replace(/^0+/, "").length;
  digits = digits.slice(lead);
  decpt -= lead;
  digits = digits.replace(/0+$/, "");
  if (-4 < decpt && decpt <= 16) {
    if (decpt <= 0) return `${sign}0.${"0".repeat(-decpt)}${digits}`;
    if (decpt >= digits.length) return `${sign}${digits}${"0".repeat(decpt - digits.length)}.0`;
    return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
  }
  const e = decpt - 1;
  const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  return `${sign}${m}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
}

function isWellFormed(s: string): boolean {
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
}

/** The JSON text of a string as Python's ``json.dumps(s, ensure_ascii=False)`` writes it. */
export function jsonString(s: string): string {
  if (typeof s !== "string") throw new ParameterError("a name or text value must be a string");
  if (!isWellFormed(s)) throw new ParameterError("a text value holds a lone surrogate: it has no UTF-8 form");
  return JSON.stringify(s); // escapes exactly " \ and the control characters, as Python does
}

function encodeFloat(x: number): string {
  if (Number.isNaN(x)) return '{"float":"nan"}';
  if (x === Infinity) return '{"float":"inf"}';
  if (x === -Infinity) return '{"float":"-inf"}';
  return pythonFloatRepr(x);
}

/** The canonical text of one value (see the module comment). */
export function encodeValue(value: Value): string {
  if (value === REDACTED) return '{"redacted":true}';
  if (value === null || value === undefined) {
    if (value === undefined) throw new ParameterError("a value is undefined; give null for a missing value");
    return "null";
  }
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "string") return jsonString(value);
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "number") return Number.isSafeInteger(value) ? String(value) : encodeFloat(value);
  if (value instanceof FloatValue) return encodeFloat(value.value);
  if (value instanceof EncodedValue) return value.text;
  throw new ParameterError(
    `cannot encode a value of type ${Object.prototype.toString.call(value)}; cast it to text or numbers first`,
  );
}

/**
 * Inverse of :func:`encodeValue` (for the generalised values of a plan's recodings): JSON
 * scalars; a whole number written as a float (``39.0``) comes back as :class:`FloatValue`;
 * the redaction marker as :data:`REDACTED`; other tagged values as :class:`EncodedValue`.
 */
export function decodeValue(text: string): Value {
  const obj: unknown = JSON.parse(text);
  if (obj === null || typeof obj === "boolean" || typeof obj === "string") return obj;
  if (typeof obj === "number") {
    if (/[.eE]/.test(text)) return new FloatValue(obj);
    return Number.isSafeInteger(obj) ? obj : BigInt(text.trim());
  }
  if (typeof obj === "object" && !Array.isArray(obj) && Object.keys(obj).length === 1) {
    const [[tag, payload]] = Object.entries(obj as Record<string, unknown>) as [[string, unknown]];
    if (tag === "redacted") return REDACTED;
    if (tag === "float" && typeof payload === "string") {
      const x = { nan: NaN, inf: Infinity, "-inf": -Infinity }[payload];
      if (x !== undefined) return new FloatValue(x);
    }
    return new EncodedValue(text);
  }
  throw new ParameterError(`${text.slice(0, 40)} is not a canonical value`);
}
