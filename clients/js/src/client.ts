/**
 * A user's device over HTTP (the Python ``sdckit.protocol.Client``). It talks to the shuffler
 * only: the curator's and analyst's keys, the spec, the pair queries and the plan come relayed by
 * the shuffler and signed by their owners, whose Ed25519 verification keys the device pins.
 */

import { randomBytes, toHex } from "./bytes.js";
import { Credential, ENROL_ROUNDS, Enrolment } from "./enrol.js";
import { verifyPairsBound, verifyPlanBound } from "./bounds.js";
import { MalformedMessageError, ParameterError, PlanRefusedError, ProtocolError, UnpinnedSpecError } from "./errors.js";
import { PublicKey, type Recipient, infoLabel, seal } from "./hpke.js";
import { type Json, type JsonObject, canonicalJson, verifyDocument, verifyKeyFromText } from "./signing.js";
import { REDACTED, type Value, decodeValue, encodeValue } from "./values.js";
import { KIND_PAIR, SALT_LENGTH, packBatch, packFeature, packRow } from "./wire.js";

export const PAIR_ROUND = 3;
export const BATCH_MEDIA = "application/octet-stream";
export const CREDENTIAL_HEADER = "sdckit-credential";
/** Answers worth retrying: overload, a server error, a proxy's gateway errors. */
export const RETRY_STATUS: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

export interface CollectionSpec {
  id: string;
  features: string[];
  suite: string;
  round1_pad: number;
  round2_pad: number;
  setting: string;
  min_k: number;
  max_budget: number;
  bound_method: string;
  keys: Record<string, string>;
  /** Counts a second party checks (issue 37): round 1 is sealed to the analyst as well, and a plan or pair queries need the analyst's co-signature. */
  count_check?: boolean;
}

export interface Redaction {
  feature: string;
  value_key: string;
  probability: number;
}

export interface PublishedPlan {
  collection: string;
  columns: string[];
  k: number;
  budget: number;
  bound: number;
  setting: string;
  redactions: Redaction[];
  recodings: Record<string, Record<string, string>>;
  [more: string]: unknown;
}

export interface PairQuery {
  columns: [string, string];
  redact: Record<string, string[]>;
  bound: number;
}

export interface PairQueries {
  collection: string;
  k: number;
  queries: PairQuery[];
  bound: number;
  budget: number;
  pad: number;
  evidence: Record<string, Record<string, number>>;
}

export type Row = Record<string, Value>;

export interface ClientOptions {
  /** Base URL of the shuffler. */
  shufflerUrl: string;
  /** The collection id. */
  collection: string;
  /** The curator's Ed25519 verification key (``ed25519:...``), pinned out of band. */
  curatorVerifyKey: string;
  /** The analyst's verification key (round 2 only). */
  analystVerifyKey?: string;
  /** A one-time invite, for a collection that admits enrolled users. */
  invite?: string;
  /** Milliseconds per HTTP request (default 30 s). */
  timeoutMs?: number;
  /** Milliseconds during which a connection error or a 429/5xx answer is retried (default 60 s). */
  retryWindowMs?: number;
  /** false: this device opts out of the pair round (``sendPairs`` sends and fetches nothing). */
  joinPairs?: boolean;
  /**
   * True (the default): refuse a collection whose signed spec does not set ``count_check`` (the
   * Python ``require_count_check``); without it a curator that lies about its counts can single
   * this device out. False: take part in such a collection too.
   */
  requireCountCheck?: boolean;
  /** The ``fetch`` to use (default the platform's). */
  fetch?: typeof fetch;
}

/** Full-jitter exponential back-off in ms: uniform in [0, min(cap, base 2^attempt)]. */
export function backoffMs(attempt: number, base = 100, cap = 4000): number {
  const r = new Uint32Array(1);
  globalThis.crypto.getRandomValues(r);
  return (r[0]! / 2 ** 32) * Math.min(cap, base * 2 ** attempt);
}

/** True with probability ``p``: 53 random bits from the CSPRNG, P(u < p 2^53) = p up to 2^-53. */
export function coin(p: number): boolean {
  if (p <= 0) return false;
  if (p >= 1) return true;
  const b = randomBytes(7);
  let u = b[0]! & 0x1f; // 5 + 48 = 53 bits
  for (let i = 1; i < 7; i++) u = u * 256 + b[i]!;
  return u < p * 2 ** 53;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const isObject = (x: unknown): x is JsonObject => typeof x === "object" && x !== null && !Array.isArray(x);
const isInt = (x: unknown): x is number => typeof x === "number" && Number.isInteger(x);
const isShare = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x) && x >= 0 && x <= 1;

function parseSpec(doc: JsonObject): CollectionSpec {
  const d = doc as unknown as CollectionSpec;
  const ok =
    typeof d.id === "string" &&
    Array.isArray(d.features) &&
    d.features.every((f) => typeof f === "string") &&
    isInt(d.round1_pad) &&
    isInt(d.round2_pad) &&
    isInt(d.min_k) &&
    d.min_k >= 2 &&
    isShare(d.max_budget) &&
    isObject(d.keys ?? {}) &&
    (d.count_check === undefined || typeof d.count_check === "boolean");
  if (!ok) throw new MalformedMessageError("the relayed spec is not a collection spec");
  return { ...d, suite: d.suite ?? "x25519", setting: d.setting ?? "fixed", bound_method: d.bound_method ?? "best", keys: { ...(d.keys ?? {}) } };
}

function refuse(what: string, collection: string, why: string): never {
  throw new PlanRefusedError(`the ${what} of ${JSON.stringify(collection)} is refused: ${why}; nothing is sent for it`);
}

/** Every party whose HPKE key a collection's spec must pin (the Python ``PINNED_ROLES``). */
export const PINNED_ROLES = ["curator", "analyst", "shuffler"] as const;

/**
 * Refuse (:class:`UnpinnedSpecError`) a spec that leaves a party's HPKE key open: the device would
 * take whatever key the relay hands it, so a party could give each device its own key and tell
 * devices apart (issue 37).
 */
export function requirePinned(spec: CollectionSpec): void {
  const missing = PINNED_ROLES.filter((r) => typeof spec.keys[r] !== "string" || !spec.keys[r]);
  if (missing.length) {
    throw new UnpinnedSpecError(
      `this device refuses collection ${JSON.stringify(spec.id)}: its spec does not pin the ${missing.join(", ")} key${missing.length > 1 ? "s" : ""}; nothing is sent`,
    );
  }
}

/**
 * Check a plan as the Python client does: the fields parse, its collection, setting, k, budget
 * and bound meet the spec's pinned floors, and its bound is recomputed from the counts published
 * with it (:func:`verifyPlanBound`); a claim below the recomputed bound is refused.
 */
export function checkPlan(doc: JsonObject, spec: CollectionSpec): PublishedPlan {
  const p = { redactions: [], recodings: {}, setting: "fixed", ...doc } as unknown as PublishedPlan;
  const ok =
    typeof p.collection === "string" &&
    Array.isArray(p.columns) &&
    p.columns.every((c) => typeof c === "string") &&
    new Set(p.columns).size === p.columns.length &&
    Array.isArray(p.redactions) &&
    p.redactions.every((r) => typeof r.feature === "string" && typeof r.value_key === "string" && isShare(r.probability)) &&
    isObject(p.recodings) &&
    Object.entries(p.recodings).every(
      ([c, m]) => p.columns.includes(c) && isObject(m) && Object.values(m).every((v) => typeof v === "string"),
    );
  if (!ok) throw new MalformedMessageError("not a published plan");
  if (p.setting !== spec.setting) refuse("plan", spec.id, `its setting ${p.setting} is not the collection's ${spec.setting}`);
  verifyPlanBound(p as unknown as Record<string, unknown>, spec);
  return p;
}

/** Check pair queries: the fields parse, the floors hold, no published value is held by fewer than k users, and each query's bound is recomputed (:func:`verifyPairsBound`). */
export function checkPairs(doc: JsonObject, spec: CollectionSpec): PairQueries {
  const q = { evidence: {}, ...doc } as unknown as PairQueries;
  const ok =
    typeof q.collection === "string" &&
    isInt(q.pad) &&
    Array.isArray(q.queries) &&
    q.queries.every(
      (x) =>
        Array.isArray(x.columns) &&
        x.columns.length === 2 &&
        x.columns[0] !== x.columns[1] &&
        x.columns.every((c) => typeof c === "string") &&
        isObject(x.redact ?? {}),
    ) &&
    isObject(q.evidence);
  if (!ok) throw new MalformedMessageError("not published pair queries");
  verifyPairsBound(q as unknown as Record<string, unknown>, spec);
  return q;
}

/**
 * Refuse a plan or pair queries without the analyst's valid co-signature of exactly this document
 * (the Python ``verify_countersigned``, issue 37): a ``check`` document signed by the analyst,
 * ``{"of": kind, "collection", "sha256": SHA-256 hex of the document's RFC 8785 bytes}``.
 */
export async function verifyCountersigned(check: unknown, analystKey: Uint8Array, kind: string, collection: string, document: JsonObject): Promise<void> {
  const what = kind === "plan" ? "plan" : "pair queries";
  if (check === undefined || check === null) {
    refuse(what, collection, "the analyst has not checked its counts against the round-1 messages it received (no co-signature)");
  }
  let body: JsonObject;
  try {
    body = verifyDocument(check, analystKey, "check", "analyst");
  } catch (err) {
    refuse(what, collection, String((err as Error).message));
  }
  const digest = await globalThis.crypto.subtle.digest("SHA-256", canonicalJson(document) as BufferSource);
  const want = { of: kind, collection, sha256: toHex(new Uint8Array(digest)) };
  const keys = Object.keys(body);
  if (keys.length !== 3 || body["of"] !== want.of || body["collection"] !== want.collection || body["sha256"] !== want.sha256) {
    refuse(what, collection, "the analyst's co-signature is for another document");
  }
}

/**
 * SHA-256 (hex) of the plan's canonical JSON as the curator signed it (the Python
 * ``PublishedPlan.sha256``): the SDK's defaults left out (``recodings`` and ``evidence`` are
 * absent from a signed plan that has none). Bound into round 2's outer HPKE ``info``.
 */
export async function planSha256(plan: PublishedPlan): Promise<string> {
  const doc: Record<string, unknown> = { ...plan };
  for (const key of ["recodings", "evidence"]) {
    const v = doc[key];
    if (v === undefined || (isObject(v) && Object.keys(v).length === 0)) delete doc[key];
  }
  const digest = await globalThis.crypto.subtle.digest("SHA-256", canonicalJson(doc) as BufferSource);
  return toHex(new Uint8Array(digest));
}

/**
 * Refuse a plan whose published counts do not list this user's own value of an unrecoded planned
 * column (the Python ``check_own_values``): in the fixed setting every value sent raw was counted,
 * so counts that leave it out are not the counts of the users the plan is sent to. A value a
 * redaction rule sends redacted passes; the statistical setting is not checked.
 */
export function checkOwnValues(plan: PublishedPlan, row: Row): void {
  if ((plan.setting ?? "fixed") !== "fixed" || plan.columns.length === 0) return;
  const ev = plan["evidence"];
  const counts = isObject(ev) && isObject(ev["counts"]) ? (ev["counts"] as Record<string, unknown>) : {};
  for (const c of plan.columns) {
    if (Object.hasOwn(plan.recodings ?? {}, c) || !(c in row)) continue;
    const key = encodeValue(row[c]!);
    const listed = counts[c];
    if (isObject(listed) && Object.hasOwn(listed, key)) continue;
    if ((plan.redactions ?? []).some((r) => r.feature === c && r.value_key === key)) continue;
    refuse("plan", plan.collection, `its published counts of ${JSON.stringify(c)} do not list this device's own value, so they are not the counts of the users it is sent to`);
  }
}

/** The value a user sends for ``column`` under ``plan``'s recoding (REDACTED outside the mapping). */
export function generalise(plan: PublishedPlan, column: string, value: Value): Value {
  const mapping = plan.recodings[column];
  if (mapping === undefined || value === REDACTED) return value;
  const key = encodeValue(value);
  return Object.hasOwn(mapping, key) ? decodeValue(mapping[key]!) : REDACTED;
}

/** A user's device, talking to the shuffler only (see the module comment). */
export class Client {
  readonly shufflerUrl: string;
  readonly collection: string;
  credentials: Record<number, Credential> = {};
  private readonly owners: Record<string, Uint8Array> = {};
  private readonly opts: ClientOptions;
  private readonly fetchImpl: typeof fetch;
  private collectionCache?: Promise<{ spec: CollectionSpec; terms: JsonObject }>;
  private keyCache: Partial<Record<Recipient, Promise<PublicKey>>> = {};

  constructor(opts: ClientOptions) {
    this.opts = opts;
    this.shufflerUrl = opts.shufflerUrl.replace(/\/+$/, "");
    this.collection = opts.collection;
    this.owners["curator"] = verifyKeyFromText(opts.curatorVerifyKey);
    if (opts.analystVerifyKey) this.owners["analyst"] = verifyKeyFromText(opts.analystVerifyKey);
    this.fetchImpl = opts.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /**
   * One request, retried with full-jitter back-off on a connection error, a timeout or a
   * 429/500/502/503/504 answer until ``retryWindowMs`` has passed; the same body every time (a
   * retried submission is recognised by the shuffler and counted once).
   */
  async request(method: string, path: string, init: { body?: Uint8Array | string; headers?: Record<string, string> } = {}): Promise<Response> {
    const url = `${this.shufflerUrl}${path}`;
    const deadline = Date.now() + (this.opts.retryWindowMs ?? 60_000);
    for (let attempt = 0; ; attempt++) {
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), this.opts.timeoutMs ?? 30_000);
      try {
        const r = await this.fetchImpl(url, {
          method,
          headers: init.headers,
          body: init.body as BodyInit | undefined,
          signal: abort.signal,
        });
        if (!RETRY_STATUS.has(r.status) || Date.now() >= deadline) return r;
        await r.body?.cancel();
      } catch (err) {
        if (err instanceof Error && err.name !== "TypeError" && err.name !== "AbortError") throw err;
        if (Date.now() >= deadline) {
          throw new ProtocolError(`cannot reach ${url} within the retry window (${attempt + 1} attempts)`);
        }
      } finally {
        clearTimeout(timer);
      }
      await sleep(Math.min(backoffMs(attempt), Math.max(0, deadline - Date.now()) + 10));
    }
  }

  private static async fail(r: Response, what: string): Promise<never> {
    let detail = await r.text();
    try {
      const body = JSON.parse(detail) as { detail?: unknown };
      if (body && body.detail !== undefined) detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    } catch {
      /* not JSON: the text as it is */
    }
    if (r.status === 400) throw new MalformedMessageError(`${what}: ${detail}`);
    throw new ProtocolError(`${what}: HTTP ${r.status}: ${detail}`, r.status);
  }

  private async getJson(path: string, what: string): Promise<Json> {
    const r = await this.request("GET", path);
    if (!r.ok) await Client.fail(r, what);
    return (await r.json()) as Json;
  }

  private async ownerDoc(path: string, kind: string, role: string): Promise<JsonObject | null> {
    const r = await this.request("GET", path);
    const what = `${kind} of ${JSON.stringify(this.collection)}`;
    if ((kind === "plan" || kind === "pairs") && r.status === 404) return null; // not published yet
    if ((kind === "plan" || kind === "pairs") && r.status === 409) {
      const text = await r.text();
      let detail = text;
      try {
        detail = String((JSON.parse(text) as { detail?: unknown }).detail ?? text);
      } catch {
        /* the text */
      }
      throw new PlanRefusedError(`${what}: ${detail}`, 409);
    }
    if (!r.ok) await Client.fail(r, what);
    const key = this.owners[role];
    if (key === undefined) throw new ParameterError(`give ${role}VerifyKey to check the ${role}'s ${kind}`);
    const signed = (await r.json()) as Json;
    const doc = verifyDocument(signed, key, kind, role);
    if ((kind === "plan" || kind === "pairs") && (await this.spec()).count_check === true) {
      // counts a second party checks (issue 37): the analyst's co-signature of exactly this document
      const analyst = this.owners["analyst"];
      if (analyst === undefined) throw new ParameterError(`give analystVerifyKey to check the analyst's co-signature of the ${kind}`);
      await verifyCountersigned(isObject(signed) ? signed["check"] : undefined, analyst, kind, this.collection, doc);
    }
    return doc;
  }

  private loadCollection(): Promise<{ spec: CollectionSpec; terms: JsonObject }> {
    this.collectionCache ??= (async () => {
      const body = await this.getJson(`/v1/collections/${encodeURIComponent(this.collection)}`, `collection ${JSON.stringify(this.collection)}`);
      if (!isObject(body)) throw new MalformedMessageError("the collection answer is not a JSON object");
      const spec = parseSpec(verifyDocument(body["spec"], this.owners["curator"]!, "spec", "curator"));
      if (spec.id !== this.collection) throw new MalformedMessageError(`the relayed spec is for ${JSON.stringify(spec.id)}`);
      requirePinned(spec); // nothing is sealed to a key the spec leaves open
      if (this.opts.requireCountCheck !== false && spec.count_check !== true) {
        throw new PlanRefusedError(
          `collection ${JSON.stringify(this.collection)} is refused: its spec does not have the analyst check the curator's counts (count_check), and this device requires it; nothing is sent (a device that accepts the risk passes requireCountCheck: false)`,
        );
      }
      if (spec.suite !== "x25519") PublicKey.fromText(`${spec.suite}:`); // refuses the hybrid suite, saying why
      const enrolment = body["enrolment"];
      const terms = isObject(enrolment) && isObject(enrolment["document"]) ? enrolment["document"] : {};
      return { spec, terms };
    })();
    this.collectionCache.catch(() => (this.collectionCache = undefined)); // a failure is not cached
    return this.collectionCache;
  }

  /** The collection's spec (signed by the curator, relayed by the shuffler). */
  async spec(): Promise<CollectionSpec> {
    return (await this.loadCollection()).spec;
  }

  /**
   * The HPKE public key of ``role``: the key the signed spec pins, checked against the key the
   * shuffler relays; a relayed key that differs is refused (one key per party and collection).
   */
  publicKey(role: Recipient): Promise<PublicKey> {
    const cached = this.keyCache[role];
    if (cached) return cached;
    const p = (async () => {
      let relayed: string;
      if (role === "shuffler") {
        const body = await this.getJson("/v1/keys", "keys of the shuffler");
        relayed = String(((body as JsonObject)["document"] as JsonObject)["public_key"]);
      } else {
        const doc = (await this.ownerDoc(`/v1/keys/${role}`, "keys", role))!;
        if (doc["role"] !== role) throw new MalformedMessageError(`the relayed keys are the ${String(doc["role"])}'s, not the ${role}'s`);
        relayed = String(doc["public_key"]);
      }
      const pinned = (await this.spec()).keys[role];
      if (pinned !== undefined && relayed !== pinned) {
        throw new ProtocolError(
          `the ${role}'s key relayed for ${JSON.stringify(this.collection)} is not the one its signed spec pins: refused (a key per device would let a party tell devices apart); nothing is sent`,
        );
      }
      return PublicKey.fromText(pinned ?? relayed);
    })();
    this.keyCache[role] = p;
    p.catch(() => delete this.keyCache[role]);
    return p;
  }

  /** The published plan (signed by the curator), checked (:func:`checkPlan`), or null while undecided. */
  async plan(): Promise<PublishedPlan | null> {
    const doc = await this.ownerDoc(`/v1/collections/${encodeURIComponent(this.collection)}/plan`, "plan", "curator");
    return doc === null ? null : checkPlan(doc, await this.spec());
  }

  /** The published pair queries (signed by the curator), checked (:func:`checkPairs`), or null. */
  async pairs(): Promise<PairQueries | null> {
    const doc = await this.ownerDoc(`/v1/collections/${encodeURIComponent(this.collection)}/pairs`, "pairs", "curator");
    return doc === null ? null : checkPairs(doc, await this.spec());
  }

  /** Trade the one-time invite for anonymous credentials of rounds 1, 2 and the pair round. */
  async enrol(invite?: string): Promise<Record<number, Credential>> {
    const code = invite ?? this.opts.invite;
    if (!code) throw new ParameterError(`collection ${JSON.stringify(this.collection)} admits enrolled users: give invite`);
    const { terms } = await this.loadCollection();
    const keys = terms["issuer_keys"];
    if (!isObject(keys)) {
      throw new MalformedMessageError(`the shuffler's enrolment terms for ${JSON.stringify(this.collection)} carry no issuer keys per round`);
    }
    const pending = await Enrolment.start(this.collection, keys as Record<string, string>, ENROL_ROUNDS);
    const r = await this.request("POST", `/v1/collections/${encodeURIComponent(this.collection)}/enrol`, {
      body: JSON.stringify({ users: [{ invite: code, blinded: pending.blinded }] }),
      headers: { "content-type": "application/json" },
    });
    if (!r.ok) await Client.fail(r, "enrolment");
    const answer = (await r.json()) as { evaluated?: Record<string, unknown> };
    this.credentials = await pending.finish(answer.evaluated ?? {});
    return this.credentials;
  }

  /** Post sealed messages for ``round`` (with the device's credential when the collection admits enrolled users). */
  async submit(round: number, messages: Uint8Array[], credentials?: Credential[]): Promise<Record<string, unknown>> {
    let creds = credentials;
    if (creds === undefined) {
      creds = [];
      if ((await this.loadCollection()).terms["enrolment"] === "tokens") {
        if (this.credentials[round] === undefined) await this.enrol();
        creds = [this.credentials[round]!];
      }
    }
    const headers: Record<string, string> = { "content-type": BATCH_MEDIA };
    if (creds.length) headers[CREDENTIAL_HEADER] = creds.map((c) => c.toText()).join(",");
    const r = await this.request("POST", `/v1/collections/${encodeURIComponent(this.collection)}/rounds/${round}/messages`, {
      body: packBatch(messages),
      headers,
    });
    if (!r.ok) await Client.fail(r, `round ${round} submission`);
    return (await r.json()) as Record<string, unknown>;
  }

  private async doubleSeal(round: number, inner: Recipient, plain: Uint8Array, planSha256?: string): Promise<Uint8Array> {
    const [innerKey, shufflerKey] = await Promise.all([this.publicKey(inner), this.publicKey("shuffler")]);
    const sealed = await seal(innerKey, plain, infoLabel(this.collection, round, inner));
    return seal(shufflerKey, sealed, infoLabel(this.collection, round, "shuffler", planSha256));
  }

  /** Round 1's messages: one doubly sealed message per feature of the collection, in feature order. */
  async round1(row: Row): Promise<Uint8Array[]> {
    const spec = await this.spec();
    const out: Uint8Array[] = [];
    // with count_check, each feature again sealed to the analyst (its own salt), which recounts
    const recipients: Recipient[] = spec.count_check === true ? ["curator", "analyst"] : ["curator"];
    for (const inner of recipients) {
      for (const feature of spec.features) {
        if (!(feature in row)) throw new ParameterError(`the user's row has no value for feature ${JSON.stringify(feature)}`);
        const plain = packFeature(feature, row[feature]!, randomBytes(SALT_LENGTH), spec.round1_pad);
        out.push(await this.doubleSeal(1, inner, plain));
      }
    }
    return out;
  }

  /** Seal and send round 1. */
  async sendRound1(row: Row): Promise<Record<string, unknown>> {
    return this.submit(1, await this.round1(row));
  }

  /** The pair round's messages (a value the published counts do not list is sent redacted). */
  async pairMessages(row: Row, queries: PairQueries): Promise<Uint8Array[]> {
    const redact: Record<string, Set<string>> = {};
    for (const q of queries.queries) {
      for (const c of q.columns) {
        if (!(c in row)) throw new ParameterError(`the user's row has no value for the queried column ${JSON.stringify(c)}`);
        const set = (redact[c] ??= new Set());
        for (const key of q.redact?.[c] ?? []) set.add(key);
        const own = encodeValue(row[c]!);
        if (!Object.hasOwn(queries.evidence[c] ?? {}, own)) set.add(own);
      }
    }
    const out: Uint8Array[] = [];
    // with count_check, every query again sealed to the analyst (own salts), which recounts the
    // pair tables a plan rests on
    const recipients: Recipient[] = (await this.spec()).count_check === true ? ["curator", "analyst"] : ["curator"];
    for (const inner of recipients) {
      for (const q of queries.queries) {
        const values = q.columns.map((c) => (redact[c]!.has(encodeValue(row[c]!)) ? REDACTED : row[c]!));
        const plain = packRow(q.columns, values, randomBytes(SALT_LENGTH), queries.pad, KIND_PAIR);
        out.push(await this.doubleSeal(PAIR_ROUND, inner, plain));
      }
    }
    return out;
  }

  /** Seal and send the pair round (fetches the signed queries when not given). */
  async sendPairs(row: Row, queries?: PairQueries): Promise<Record<string, unknown> | null> {
    if (this.opts.joinPairs === false) return null; // opted out: nothing fetched, nothing sent
    const q = queries ?? (await this.pairs());
    if (q === null) throw new ProtocolError(`the curator of ${JSON.stringify(this.collection)} published no pair queries`);
    checkPairs(q as unknown as JsonObject, await this.spec());
    return this.submit(PAIR_ROUND, await this.pairMessages(row, q));
  }

  /** The one round-2 message: the planned columns, recoded and redacted as the plan says. */
  async round2(row: Row, plan: PublishedPlan): Promise<Uint8Array> {
    const spec = await this.spec();
    if (this.owners["analyst"] === undefined) throw new ParameterError("round 2 needs the analyst's verification key: give analystVerifyKey");
    const values: Record<string, Value> = {};
    for (const c of plan.columns) {
      if (!(c in row)) throw new ParameterError(`the user's row has no value for the planned column ${JSON.stringify(c)}`);
      values[c] = generalise(plan, c, row[c]!);
    }
    for (const rule of plan.redactions) {
      if (!(rule.feature in values) || values[rule.feature] === REDACTED) continue;
      if (encodeValue(values[rule.feature]!) === rule.value_key || coin(rule.probability)) values[rule.feature] = REDACTED;
    }
    const plain = packRow(plan.columns, plan.columns.map((c) => values[c]!), randomBytes(SALT_LENGTH), spec.round2_pad);
    return this.doubleSeal(2, "analyst", plain, await planSha256(plan));
  }

  /** Seal and send round 2 (fetches the plan when not given; nothing is sent for a refused plan). */
  async sendRound2(row: Row, plan?: PublishedPlan | null): Promise<Record<string, unknown>> {
    const p = plan ?? (await this.plan());
    if (p === null) throw new ProtocolError(`no plan is published yet for ${JSON.stringify(this.collection)}; wait for the curator`);
    checkPlan(p as unknown as JsonObject, await this.spec());
    checkOwnValues(p, row);
    if (p.columns.length === 0) {
      // nothing to release: the shuffler holds the round; say why (the plan's stated reasons)
      const reasons = [...new Set(Object.values((p["excluded"] ?? {}) as Record<string, string>))].sort().join("; ");
      throw new PlanRefusedError(`the plan of ${JSON.stringify(this.collection)} releases no column (${reasons || String(p["method"])}); nothing is sent`);
    }
    return this.submit(2, [await this.round2(row, p)]);
  }
}

export { Credential };
