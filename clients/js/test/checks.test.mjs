// The shared check vectors (tests/protocol/vectors/checks-v1.json, also read by the Python
// tests/protocol/test_check_vectors.py): the SDK accepts and refuses exactly what the Python
// client does, recomputing every plan's and pair query's bound from its published counts.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import * as sdk from "../dist/sdckit-device.mjs";

const vec = JSON.parse(readFileSync(new URL("../../../tests/protocol/vectors/checks-v1.json", import.meta.url), "utf8"));
const close = (a, b) => Math.abs(a - b) <= 1e-9 * Math.abs(b) + 1e-12;
const spec = (s) => ({ setting: "fixed", bound_method: "best", keys: {}, ...s });

for (const c of vec.plans) {
  test(`plan: ${c.name}`, () => {
    if (c.refused) {
      assert.throws(() => sdk.checkPlan(c.plan, spec(c.spec)), (e) => e instanceof sdk.PlanRefusedError && e.message.includes(c.refused));
    } else {
      const got = sdk.verifyPlanBound(c.plan, spec(c.spec));
      assert.ok(close(got, c.bound), `${got} vs ${c.bound}`);
      assert.equal(sdk.checkPlan(c.plan, spec(c.spec)).collection, "checks");
    }
  });
}

for (const c of vec.pairs) {
  test(`pair queries: ${c.name}`, () => {
    if (c.refused) {
      assert.throws(() => sdk.checkPairs(c.pairs, spec(c.spec)), (e) => e instanceof sdk.PlanRefusedError && e.message.includes(c.refused));
    } else {
      const got = sdk.verifyPairsBound(c.pairs, spec(c.spec));
      assert.ok(close(got, c.bound), `${got} vs ${c.bound}`);
    }
  });
}

test("the false bound of issue 37 is refused and nothing is sent", async () => {
  const lying = vec.plans.find((c) => c.name === "the false bound of issue 37");
  const posts = [];
  const fetch = async (url, init = {}) => {
    if ((init.method ?? "GET") === "POST") posts.push(url);
    return new Response("{}", { status: 404 });
  };
  const client = new sdk.Client({ shufflerUrl: "http://s", collection: "checks", curatorVerifyKey: vec.verify_key, fetch, retryWindowMs: 0, requireCountCheck: false });
  client.spec = async () => spec(lying.spec); // the plan's own check comes before any key or seal
  await assert.rejects(client.sendRound2({ age: '"20-29"', sex: "Male", race: "White", edu: "HS" }, lying.plan), /claims a bound of 0.004/);
  assert.equal(posts.length, 0);
});

for (const s of vec.specs) {
  test(`spec pinning ${["curator", "analyst", "shuffler"].filter((r) => !s.unpinned.includes(r)).join(",") || "no key"}`, async () => {
    const posts = [];
    const fetch = async (url, init = {}) => {
      if ((init.method ?? "GET") === "POST") posts.push(url);
      if (new URL(url).pathname === "/v1/collections/checks") return new Response(JSON.stringify({ spec: s.signed, enrolment: {} }), { status: 200 });
      return new Response("{}", { status: 404 });
    };
    const client = new sdk.Client({ shufflerUrl: "http://s", collection: "checks", curatorVerifyKey: vec.verify_key, fetch, retryWindowMs: 0, requireCountCheck: false });
    if (s.unpinned.length) {
      await assert.rejects(client.spec(), (e) => e instanceof sdk.UnpinnedSpecError && e.message.includes(`does not pin the ${s.unpinned.join(", ")}`));
      await assert.rejects(client.sendRound1({ age: 1, sex: 2 }), sdk.UnpinnedSpecError);
      assert.equal(posts.length, 0);
    } else {
      assert.equal((await client.spec()).id, "checks");
    }
  });
}

test("the exact minimum: a brute force over every sacrifice vector agrees on random counts", () => {
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let trial = 0; trial < 200; trial++) {
    const p = 1 + Math.floor(rand() * 3);
    const n = 20 + Math.floor(rand() * 80);
    const cols = [];
    for (let j = 0; j < p; j++) {
      const m = 1 + Math.floor(rand() * 5);
      const cuts = [...Array(m - 1)].map(() => 1 + Math.floor(rand() * (n - 1))).sort((a, b) => a - b);
      const counts = [];
      let prev = 0;
      for (const c of [...cuts, n]) { if (c > prev) counts.push(c - prev); prev = c; }
      cols.push(counts.sort((a, b) => a - b));
    }
    const k = 2 + Math.floor(rand() * 6);
    const tau = (k - 1) / n;
    let best = Math.min(1, tau * cols.reduce((a, c) => a * c.length, 1));
    const rec = (j, s, w2, w3) => {
      if (j === cols.length) { best = Math.min(best, s / n + tau * w2, s / n + tau * w3); return; }
      const c = cols[j];
      let acc = 0;
      for (let r = 0; r < c.length; r++) { rec(j + 1, s + acc, w2 * (c.length - r), w3 * (n / c[r])); acc += c[r]; }
    };
    rec(0, 0, 1, 1);
    best = Math.min(1, best);
    const got = sdk.jointExposureBound(cols, n, k, "best");
    assert.ok(got >= best * (1 - 1e-12) && close(got, best), `${JSON.stringify(cols)} n=${n} k=${k}: ${got} vs ${best}`);
  }
});

for (const c of vec.own_values) {
  test(`own value: ${c.name}`, () => {
    const plan = { redactions: [], recodings: {}, setting: "fixed", ...c.plan };
    if (c.refused) {
      assert.throws(() => sdk.checkOwnValues(plan, c.row), (e) => e instanceof sdk.PlanRefusedError && e.message.includes(c.refused));
    } else {
      sdk.checkOwnValues(plan, c.row);
    }
  });
}

test("the lying plan of issue 37 (one value per column): a device whose value it leaves out sends nothing", async () => {
  const lying = vec.own_values.find((c) => c.name === "lying plan, another age");
  const posts = [];
  const fetch = async (url, init = {}) => {
    if ((init.method ?? "GET") === "POST") posts.push(url);
    return new Response("{}", { status: 404 });
  };
  const client = new sdk.Client({ shufflerUrl: "http://s", collection: "checks", curatorVerifyKey: vec.verify_key, fetch, retryWindowMs: 0, requireCountCheck: false });
  client.spec = async () => ({ id: "checks", features: ["age", "sex"], min_k: 2, max_budget: 0.5, setting: "fixed", bound_method: "best", keys: {} });
  await assert.rejects(client.sendRound2(lying.row, lying.plan), /do not list this device's own value/);
  assert.equal(posts.length, 0);
});
