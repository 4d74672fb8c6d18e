"""The TypeScript device SDK (clients/js) in real headless Chromium against the Python services.

The page is opened on the shuffler's origin (its ``/healthz``) and the built bundle
(``clients/js/dist/sdckit-device.js``) is injected into it, so the SDK's requests are same-origin
and the services need no CORS allow-list. A few hundred simulated users, each its own
:class:`Client` with its own invite, enrol (VOPRF) and send round 1, the pair round and round 2
from the page; the curator's pair tables equal an independent count of their rows and the
analyst's release equals their rows. Python seals nothing here: every message the services open
was sealed by the SDK, and every signature the SDK checks was made by the services.
Skips, saying why, without Chromium, Playwright or a built bundle.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sdckit.protocol import REDACTED, CollectionSpec, encode_value
from sdckit.protocol._spec import PAIR_ROUND
from sdckit.protocol.services._launch import LocalDeployment

from .conftest import FEATURES, wait_until

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "clients" / "js"
BUNDLE = SDK / "dist" / "sdckit-device.js"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
USERS = 300

pytestmark = [
    pytest.mark.browser,
    pytest.mark.services,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (apt-get install chromium)"),
]

# one function per phase; the Client objects stay in the page between phases
PAGE_SCRIPT = """
async ({phase, shufflerUrl, curatorVerifyKey, analystVerifyKey, collection, invites, rows}) => {
  const S = window.SdckitDevice;
  if (!window.devices) {
    window.devices = invites.map((invite) => new S.Client({shufflerUrl, collection, curatorVerifyKey, analystVerifyKey, invite}));
  }
  const run = async (f) => {
    const out = [];
    for (let i = 0; i < devices.length; i += 25) {
      out.push(...(await Promise.all(devices.slice(i, i + 25).map((c, j) => f(c, rows[i + j])))));
    }
    return out;
  };
  if (phase === "round1") {
    const acks = await run((c, row) => c.sendRound1(row));
    return {acks, credentials: devices.map((c) => Object.keys(c.credentials).sort().join(","))};
  }
  if (phase === "pairs") {
    const queries = await devices[0].pairs();
    return {acks: await run((c, row) => c.sendPairs(row, queries)), queries};
  }
  const plan = await devices[0].plan();
  return {acks: await run((c, row) => c.sendRound2(row, plan)), plan};
}
"""


def _bundle() -> Path:
    """The built bundle; built here (no download) when the SDK's packages are installed."""
    sources = [*SDK.glob("src/*.ts"), SDK / "build.mjs"]
    fresh = BUNDLE.exists() and BUNDLE.stat().st_mtime >= max(p.stat().st_mtime for p in sources)
    if not fresh:
        npm = shutil.which("npm")
        if npm is None or not (SDK / "node_modules").is_dir():
            pytest.skip(
                "the SDK bundle is not built: run `make test`, or `npm ci && npm run build` in clients/js"
            )
        subprocess.run([npm, "run", "build"], cwd=SDK, check=True, capture_output=True)
    return BUNDLE


def test_the_sdk_in_chromium_enrols_and_submits_every_round(
    tmp_path: Path, adult_rows: list[dict[str, Any]]
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    bundle = _bundle()
    rows = adult_rows[:USERS]
    cid = "browser"
    spec = CollectionSpec(id=cid, features=FEATURES, max_budget=0.5)
    problems: list[str] = []
    timing: dict[str, float] = {}
    with LocalDeployment(tmp_path, batch_threshold=1, poll_seconds=0.05) as dep, dep.admin() as admin:
        sh, cu, an = dep.urls["shuffler"], dep.urls["curator"], dep.urls["analyst"]
        dep.create(spec, enrolment="tokens")
        for r in (1, 2, PAIR_ROUND):  # closed at once: forwarded as soon as pooled
            admin.post(f"{sh}/admin/v1/collections/{cid}/rounds/{r}/flush").raise_for_status()
        args = {
            "shufflerUrl": sh,
            "curatorVerifyKey": dep.verify_key("curator"),
            "analystVerifyKey": dep.verify_key("analyst"),
            "collection": cid,
            "invites": dep.invites(cid, len(rows)),
            "rows": rows,
        }
        tally = f"{cu}/admin/v1/collections/{cid}/tally"
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM,
                args=[
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--no-first-run",
                ],
            )
            try:
                page = browser.new_page()
                page.on(
                    "console",
                    lambda m: (
                        problems.append(f"{m.text} ({m.location.get('url')})")
                        if m.type == "error" and not str(m.location.get("url", "")).endswith("/favicon.ico")
                        else None
                    ),
                )
                page.on("pageerror", lambda e: problems.append(str(e)))
                page.goto(f"{sh}/healthz")  # the shuffler's origin: same-origin requests, no CORS
                page.add_script_tag(path=str(bundle))
                assert page.evaluate("typeof window.SdckitDevice.Client") == "function"

                t0 = time.perf_counter()
                got = page.evaluate(PAGE_SCRIPT, {**args, "phase": "round1"})
                timing["round1"] = time.perf_counter() - t0
                # one message per feature to the curator, one to the analyst (count_check, the default)
                assert all(a["accepted"] == 2 * len(FEATURES) for a in got["acks"])
                assert set(got["credentials"]) == {"1,2,3"}  # one invite: a credential per round
                wait_until(lambda: admin.get(tally).json()["accepted"] == len(rows) * len(FEATURES), 120)
                marginals = admin.get(f"{cu}/admin/v1/collections/{cid}/marginals").json()["counts"]
                assert marginals == {f: dict(Counter(encode_value(row[f]) for row in rows)) for f in FEATURES}

                r = admin.post(f"{cu}/admin/v1/collections/{cid}/pairs", json={"k": 2, "budget": 0.5})
                assert r.status_code == 200, r.text
                t0 = time.perf_counter()
                got = page.evaluate(PAGE_SCRIPT, {**args, "phase": "pairs"})
                timing["pairs"] = time.perf_counter() - t0
                queries = got["queries"]
                assert queries["queries"], "the curator asked no pair"
                n_pairs = len(queries["queries"])
                wait_until(
                    lambda: admin.get(tally).json()["accepted"] == len(rows) * (len(FEATURES) + n_pairs), 120
                )

                r = admin.post(f"{cu}/admin/v1/collections/{cid}/plan", json={"k": 2, "budget": 0.5})
                assert r.status_code == 200, r.text
                admin.put(f"{an}/admin/v1/collections/{cid}", json={"spec": spec.to_dict(), "plan": r.json()})
                t0 = time.perf_counter()
                got = page.evaluate(PAGE_SCRIPT, {**args, "phase": "round2"})
                timing["round2"] = time.perf_counter() - t0
                plan = got["plan"]
                # relayed unchanged, signature checked in the page (the SDK fills absent fields with their defaults)
                assert {k: v for k, v in plan.items() if k in r.json() or v != {}} == r.json()
                assert all(a["accepted"] == 1 for a in got["acks"])
            finally:
                browser.close()
        wait_until(
            lambda: admin.get(f"{an}/admin/v1/collections/{cid}/tally").json()["accepted"] == len(rows), 120
        )
        release = admin.get(f"{an}/admin/v1/collections/{cid}/release").json()
        tables = admin.get(f"{cu}/admin/v1/collections/{cid}/pairs/tables").json()["tables"]
    print(f"{USERS} users from Chromium, seconds per phase: {timing}", problems)
    assert problems == []
    # the pair tables: an independent count of the rows, a value the query redacts (or that the
    # published counts do not list) counted as the redaction marker
    marker = encode_value(REDACTED)
    counted = {tuple(t["columns"]): {tuple(c[:2]): c[2] for c in t["cells"]} for t in tables}
    listed = queries.get("evidence", {})
    redact = {c: set() for q in queries["queries"] for c in q["columns"]}
    for q in queries["queries"]:
        for c in q["columns"]:
            redact[c] |= set(q.get("redact", {}).get(c, []))
    want = {
        tuple(q["columns"]): dict(
            Counter(
                tuple(
                    marker
                    if encode_value(row[c]) in redact[c] or encode_value(row[c]) not in listed.get(c, {})
                    else encode_value(row[c])
                    for c in q["columns"]
                )
                for row in rows
            )
        )
        for q in queries["queries"]
    }
    assert counted == want
    assert release["columns"] == plan["columns"]
    assert not plan.get("recodings"), "this check assumes a release as sent"
    assert not plan.get("redactions"), "this check assumes a release as sent"
    assert Counter(tuple(row) for row in release["rows"]) == Counter(
        tuple(row[c] for c in plan["columns"]) for row in rows
    )
