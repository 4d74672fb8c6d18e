// The Client against a scripted shuffler (a fake fetch serving the signed documents of the test
// vectors): what it verifies, what it refuses, and that it retries with the same body.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import * as sdk from "../dist/sdckit-device.mjs";

const vec = JSON.parse(readFileSync(new URL("../../../tests/protocol/vectors/protocol-v1.json", import.meta.url), "utf8"));
const doc = (kind, signer) => vec.documents.find((d) => d.signed.kind === kind && d.signed.signer === signer).signed;
const json = (body, status = 200) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

function shuffler({ failures = 0, routes = {} } = {}) {
  const posts = [];
  let failed = 0;
  const table = {
    "/v1/keys": () => json(doc("keys", "shuffler")),
    "/v1/keys/curator": () => json(doc("keys", "curator")),
    "/v1/keys/analyst": () => json(doc("keys", "analyst")),
    "/v1/collections/vectors": () => json({ spec: doc("spec", "curator"), enrolment: doc("enrolment", "shuffler") }),
    "/v1/collections/vectors/plan": () => json(doc("plan", "curator")),
    "/v1/collections/vectors/pairs": () => json(doc("pairs", "curator")),
    ...routes,
  };
  const fetch = async (url, init = {}) => {
    const path = new URL(url).pathname;
    if ((init.method ?? "GET") === "POST") {
      posts.push({ path, body: new Uint8Array(init.body), headers: init.headers });
      if (failed < failures) {
        failed++;
        if (failed % 2) throw new TypeError("fetch failed"); // a connection error, then a 503
        return json({ detail: "restarting" }, 503);
      }
      return json({ accepted: 1, new: 1, users: 1 }, 202);
    }
    const route = table[path];
    return route ? route() : json({ detail: "not found" }, 404);
  };
  return { fetch, posts };
}

const options = (fetch, more = {}) => ({
  shufflerUrl: "http://shuffler.test/",
  collection: "vectors",
  curatorVerifyKey: vec.keys.curator.verify_key,
  analystVerifyKey: vec.keys.analyst.verify_key,
  fetch,
  retryWindowMs: 5000,
  requireCountCheck: false, // protocol v1's spec was signed before count_check (its own tests: countcheck.test.mjs)
  ...more,
});

async function openAll(messages, round, inner, planSha256) {
  const out = [];
  for (const m of messages) {
    const mid = await sdk.openSealed(sdk.fromHex(vec.keys.shuffler.hpke_secret), m, sdk.infoLabel("vectors", round, "shuffler", planSha256));
    out.push(await sdk.openSealed(sdk.fromHex(vec.keys[inner].hpke_secret), mid, sdk.infoLabel("vectors", round, inner)));
  }
  return out;
}

const row = { age: 39, sex: "Male", race: "White" };

test("a session: spec, keys, plan and pairs verified; rounds sealed to the pinned keys; retries send the same body", async () => {
  const { fetch, posts } = shuffler({ failures: 2 });
  const client = new sdk.Client(options(fetch));
  const spec = await client.spec();
  assert.deepEqual(spec.features, ["age", "sex", "race"]);
  const c1 = new sdk.Credential(1, new Uint8Array(32), new Uint8Array(64));
  await client.submit(1, await client.round1(row), [c1]);
  assert.equal(posts.length, 3); // connection error, 503, then accepted
  assert.ok(posts.every((p) => sdk.toHex(p.body) === sdk.toHex(posts[0].body)));
  assert.equal(posts[0].headers["sdckit-credential"], c1.toText());
  const round1 = await openAll(sdk.unpackBatch(posts[0].body), 1, "curator");
  assert.deepEqual(round1.map((p) => p.length), [64, 64, 64]);
  const body = (p) => new TextDecoder().decode(p.subarray(20, 20 + new DataView(p.buffer).getUint16(18)));
  assert.deepEqual(round1.map(body), ['["age",39]', '["sex","Male"]', '["race","White"]']);

  const plan = await client.plan();
  assert.deepEqual(plan.columns, ["age", "sex"]);
  const bound = await sdk.planSha256(plan); // round 2's outer label carries the plan's hash
  assert.equal(bound, vec.rounds.find((r) => r.round === 2).plan_sha256);
  await assert.rejects(openAll([await client.round2(row, plan)], 2, "analyst"), sdk.MalformedMessageError); // without it: does not open
  const [r2] = await openAll([await client.round2(row, plan)], 2, "analyst", bound);
  // age recoded by the plan (39 -> "30-39"); sex is "Male", redacted with probability 0.25
  assert.match(body(r2), /^\[\["age","30-39"\],\["sex",("Male"|\{"redacted":true\})\]\]$/);
  const [r2other] = await openAll([await client.round2({ ...row, age: 41, sex: "Other" }, plan)], 2, "analyst", bound);
  assert.equal(body(r2other), '[["age",{"redacted":true}],["sex",{"redacted":true}]]'); // 41: not in the recoding; "Other": the rule's value

  const pairs = await client.pairs();
  const [p] = await openAll(await client.pairMessages({ ...row, race: "Other" }, pairs), 3, "curator");
  assert.equal(p[1], sdk.KIND_PAIR);
  assert.equal(body(p), '[["sex","Male"],["race",{"redacted":true}]]');
});

test("a relayed key that the signed spec does not pin is refused, nothing sent", async () => {
  const other = doc("keys", "analyst");
  const { fetch, posts } = shuffler({ routes: { "/v1/keys": () => json({ ...doc("keys", "shuffler"), document: other.document }) } });
  const client = new sdk.Client(options(fetch));
  await assert.rejects(client.sendRound1(row), /not the one its signed spec pins/);
  assert.equal(posts.length, 0);
});

test("a spec signed by another key, or a plan below the floors, is refused", async () => {
  const { fetch } = shuffler();
  const wrong = new sdk.Client(options(fetch, { curatorVerifyKey: vec.keys.analyst.verify_key }));
  await assert.rejects(wrong.spec(), sdk.MalformedMessageError);
  const client = new sdk.Client(options(fetch));
  const plan = await client.plan();
  assert.throws(() => sdk.checkPlan({ ...plan, k: 1 }, { id: "vectors", min_k: 2, max_budget: 0.1, setting: "fixed" }), sdk.PlanRefusedError);
  assert.throws(() => sdk.checkPlan({ ...plan, budget: 0.5, bound: 0.1 }, { id: "vectors", min_k: 2, max_budget: 0.1, setting: "fixed" }), /max_budget/);
  assert.throws(() => sdk.checkPlan({ ...plan, collection: "other" }, { id: "vectors", min_k: 2, max_budget: 0.1, setting: "fixed" }), /for collection/);
  await assert.rejects(client.sendRound2(row, { ...plan, k: 1 }), sdk.PlanRefusedError);
});

test("no plan yet is null; a refused plan (409) raises PlanRefusedError; errors keep their status", async () => {
  const { fetch } = shuffler({
    routes: {
      "/v1/collections/vectors/plan": () => json({ detail: "not decided" }, 404),
      "/v1/collections/vectors/pairs": () => json({ detail: "the bound is not backed" }, 409),
    },
  });
  const client = new sdk.Client(options(fetch));
  assert.equal(await client.plan(), null);
  await assert.rejects(client.pairs(), (e) => e instanceof sdk.PlanRefusedError && /not backed/.test(e.message));
  const gone = new sdk.Client(options(fetch, { collection: "missing" }));
  await assert.rejects(gone.spec(), (e) => e instanceof sdk.ProtocolError && e.status === 404);
});

test("Python float repr for random doubles: shortest digits, Python's layout", () => {
  const buf = new DataView(new ArrayBuffer(8));
  for (let i = 0; i < 2000; i++) {
    crypto.getRandomValues(new Uint8Array(buf.buffer));
    const x = buf.getFloat64(0);
    if (!Number.isFinite(x)) continue;
    const text = sdk.pythonFloatRepr(x);
    assert.equal(Number(text), x, text); // round-trips
    assert.match(text, /^-?(\d+\.\d+|\d(\.\d+)?e[+-]\d{2,3})$/);
  }
});

test("a device that opts out of the pair round fetches and sends nothing for it", async () => {
  const { fetch, posts } = shuffler();
  let gets = 0;
  const counting = async (url, init = {}) => {
    if ((init.method ?? "GET") === "GET" && new URL(url).pathname.endsWith("/pairs")) gets++;
    return fetch(url, init);
  };
  const client = new sdk.Client(options(counting, { joinPairs: false }));
  assert.equal(await client.sendPairs(row), null);
  assert.equal(posts.length, 0);
  assert.equal(gets, 0);
});
