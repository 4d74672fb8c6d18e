// The shared test vectors (tests/protocol/vectors/protocol-v1.json, written by the Python
// generator) checked against the SDK: JCS, value encodings, signatures, wire frames, HPKE opens
// of Python-sealed messages, VOPRF keys, credentials and the shuffler's batch answer.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { CryptoNoble } from "@cloudflare/voprf-ts/crypto-noble";
import { DLEQProof, DLEQVerifier, Oprf, VOPRFServer, deriveKeyPair } from "@cloudflare/voprf-ts";

import * as sdk from "../dist/sdckit-device.mjs";

const vec = JSON.parse(readFileSync(new URL("../../../tests/protocol/vectors/protocol-v1.json", import.meta.url), "utf8"));
const hex = sdk.toHex;
const unhex = sdk.fromHex;

function value(c) {
  if (c.kind === "redacted") return sdk.REDACTED;
  if (c.kind !== "float") return c.json;
  const x = new DataView(unhex(c.bits).buffer).getFloat64(0);
  return Number.isSafeInteger(x) || Object.is(x, -0) ? sdk.float(x) : x; // a whole float stays a float
}

test("JCS canonical forms (RFC 8785) match the Python rfc8785 package", () => {
  for (const c of vec.jcs) assert.equal(new TextDecoder().decode(sdk.canonicalJson(c.input)), c.canonical);
});

test("value encodings match Python's encode_value byte for byte", () => {
  for (const c of vec.values) {
    const v = value(c);
    assert.equal(sdk.encodeValue(v), c.encoded, JSON.stringify(c));
    assert.equal(sdk.encodeValue(sdk.decodeValue(c.encoded)), c.encoded);
  }
  assert.throws(() => sdk.encodeValue("\ud800"), sdk.ParameterError);
  assert.throws(() => sdk.encodeValue(new Date()), sdk.ParameterError);
});

test("signed documents verify with the pinned keys, and a changed byte does not", () => {
  for (const d of vec.documents) {
    const s = d.signed;
    const key = sdk.verifyKeyFromText(vec.keys[s.signer].verify_key);
    const doc = sdk.verifyDocument(s, key, s.kind, s.signer);
    assert.equal(new TextDecoder().decode(sdk.canonicalJson({ kind: s.kind, signer: s.signer, document: doc })), d.canonical);
    const altered = structuredClone(s);
    const first = Object.keys(altered.document)[0];
    altered.document[first] = altered.document[first] === "x" ? "y" : "x";
    assert.throws(() => sdk.verifyDocument(altered, key, s.kind, s.signer), sdk.MalformedMessageError);
    assert.throws(() => sdk.verifyDocument(s, key, s.kind === "plan" ? "spec" : "plan", s.signer), sdk.MalformedMessageError);
    const other = sdk.verifyKeyFromText(vec.keys[s.signer === "curator" ? "analyst" : "curator"].verify_key);
    assert.throws(() => sdk.verifyDocument(s, other, s.kind, s.signer), sdk.MalformedMessageError);
  }
});

test("wire frames: the SDK packs the Python plaintexts and batches byte for byte", () => {
  const w = vec.wire;
  const salt = unhex(w.salt);
  for (const f of w.features) assert.equal(hex(sdk.packFeature(f.feature, value(f.value), salt, w.round1_pad)), f.plaintext);
  for (const r of w.rows) assert.equal(hex(sdk.packRow(r.columns, r.values.map(value), salt, r.pad, r.kind)), r.plaintext);
  const messages = w.batch.messages.map(unhex);
  assert.equal(hex(sdk.packBatch(messages)), w.batch.frame);
  assert.deepEqual(sdk.unpackBatch(unhex(w.batch.frame)).map(hex), w.batch.messages);
  assert.throws(() => sdk.unpackBatch(unhex(w.batch.frame).subarray(1)), sdk.MalformedMessageError);
  assert.throws(() => sdk.packFeature("age", "x".repeat(60), salt, w.round1_pad), sdk.ParameterError);
});

test("HPKE: every round's Python-sealed message opens with the fixed keys and its labels only", async () => {
  const secret = (role) => unhex(vec.keys[role].hpke_secret);
  for (const r of vec.rounds) {
    assert.equal(new TextDecoder().decode(sdk.infoLabel(vec.voprf.collection, r.round, "shuffler", r.plan_sha256)), r.info_outer);
    if (r.round === 2) {
      // the plan's hash as the SDK computes it from the signed plan equals Python's
      const plan = vec.documents.find((d) => d.signed.kind === "plan").signed.document;
      assert.equal(await sdk.planSha256(plan), r.plan_sha256);
    }
    const inner = await sdk.openSealed(secret("shuffler"), unhex(r.sealed), new TextEncoder().encode(r.info_outer));
    const plain = await sdk.openSealed(secret(r.inner), inner, new TextEncoder().encode(r.info_inner));
    assert.equal(hex(plain), r.plaintext);
    await assert.rejects(sdk.openSealed(secret("shuffler"), unhex(r.sealed), new TextEncoder().encode(r.info_inner)), sdk.MalformedMessageError);
  }
  const key = sdk.PublicKey.fromText(vec.keys.curator.hpke_public);
  const info = sdk.infoLabel("vectors", 1, "curator");
  const sealed = await sdk.seal(key, new Uint8Array([1, 2, 3]), info);
  assert.equal(sealed.length, sdk.sealedLength(3));
  assert.deepEqual([...(await sdk.openSealed(secret("curator"), sealed, info))], [1, 2, 3]);
  assert.throws(() => sdk.PublicKey.fromText("mlkem768-x25519:AAAA"), /does not implement/);
});

test("VOPRF (RFC 9497 ristretto255-SHA512): keys, credentials and the shuffler's batch answer", async () => {
  const v = vec.voprf;
  const suite = Oprf.Suite.RISTRETTO255_SHA512;
  assert.equal(v.suite, suite);
  const servers = {};
  for (const k of v.keys) {
    const pair = await deriveKeyPair(Oprf.Mode.VOPRF, suite, unhex(v.seed), new TextEncoder().encode(k.info), CryptoNoble);
    assert.equal(sdk.b64url(pair.publicKey), k.public_key, `round ${k.round} key`);
    servers[k.round] = { server: new VOPRFServer(suite, pair.privateKey, CryptoNoble), publicKey: pair.publicKey };
  }
  for (const c of v.credentials) {
    assert.equal(hex(sdk.tokenInput(v.collection, c.round, unhex(c.nonce))), c.token_input);
    assert.equal(hex(await servers[c.round].server.evaluate(unhex(c.token_input))), c.output);
    assert.equal(new sdk.Credential(c.round, unhex(c.nonce), unhex(c.output)).toText(), c.text);
  }
  // the Python issuer's answer: proof (c || s) || evaluated element, proved against the round's key
  const group = Oprf.getGroup(suite, CryptoNoble);
  const answer = sdk.unb64url(v.evaluation.answer);
  const verifier = new DLEQVerifier({ group: group.id, hash: Oprf.getHash(suite), dst: Oprf.getDST(Oprf.Mode.VOPRF, suite, "") }, CryptoNoble);
  const pk = group.desElt(servers[1].publicKey);
  const blinded = group.desElt(sdk.unb64url(v.evaluation.blinded));
  const evaluated = group.desElt(answer.subarray(64));
  const proof = DLEQProof.deserialize(group.id, answer.subarray(0, 64), CryptoNoble);
  assert.ok(await verifier.verify([group.generator(), pk], [blinded, evaluated], proof));
  assert.ok(!(await verifier.verify([group.generator(), group.desElt(servers[2].publicKey)], [blinded, evaluated], proof)));
});

test("enrolment: blind, an answer in the shuffler's format, finish and the credential verifies", async () => {
  const v = vec.voprf;
  const suite = Oprf.Suite.RISTRETTO255_SHA512;
  const keys = {};
  const servers = {};
  for (const k of v.keys) {
    const pair = await deriveKeyPair(Oprf.Mode.VOPRF, suite, unhex(v.seed), new TextEncoder().encode(k.info), CryptoNoble);
    keys[k.round] = k.public_key;
    servers[k.round] = new VOPRFServer(suite, pair.privateKey, CryptoNoble);
  }
  const pending = await sdk.Enrolment.start(v.collection, keys);
  assert.equal(pending.blinded.length, 3);
  const group = Oprf.getGroup(suite, CryptoNoble);
  const evaluated = {};
  for (const [i, r] of [1, 2, 3].entries()) {
    const { EvaluationRequest } = await import("@cloudflare/voprf-ts");
    const ev = await servers[r].blindEvaluate(new EvaluationRequest([group.desElt(sdk.unb64url(pending.blinded[i]))]));
    evaluated[r] = sdk.b64url(sdk.concat(ev.proof.serialize(), ev.evaluated[0].serialize()));
  }
  const creds = await pending.finish(evaluated);
  for (const r of [1, 2, 3]) {
    assert.equal(hex(creds[r].output), hex(await servers[r].evaluate(sdk.tokenInput(v.collection, r, creds[r].nonce))));
  }
  // an answer evaluated with another round's key does not verify
  await assert.rejects(pending.finish({ 1: evaluated[2], 2: evaluated[1], 3: evaluated[3] }), sdk.MalformedMessageError);
});
