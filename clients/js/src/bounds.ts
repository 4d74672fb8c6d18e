/**
 * The plan's and the pair queries' bounds recomputed from the counts published with them (the
 * Python ``verify_plan`` and ``verify_pairs``), so the SDK refuses a claimed bound its own counts
 * contradict (issue 37: a plan claiming 0.004 over 4 columns whose counts give 1.0 was sent).
 *
 * The single-column bounds of the anonymity notes §2 (Bravo-Hermsdorff et al. 2022,
 * arXiv:2201.12306, Theorems 2 and 3). Sacrifice the r_j rarest values of each column j (mass
 * S_j(r_j)); every exposed user holds a sacrificed value or sits in one of at most
 * prod_j w_j(r_j) cells of kept values, each of at most k - 1 users:
 *
 *     Q_J <= min_r  sum_j S_j(r_j) / n + tau prod_j w_j(r_j),     tau = (k - 1) / n,
 *
 * with w_j(r) = m_j - r (Theorem 2) or n / c_j,(r+1) (Theorem 3). The minimum is exact here: a
 * dynamic programme over the columns keeps, for each total S (an integer 0..n), the smallest
 * sum of log w, so the frontier never holds more than n + 1 points (O(p n m) time). Python's
 * frontier is thinned beyond 4,096 points (then its value is at or above this exact minimum), so
 * an honest Python plan is never refused here for that reason.
 *
 * Not recomputed here (refused when the claim rests on them, see ``verifyPlan``): bounds from
 * pair blocks (``evidence.blocks``) and the statistical setting's bound.
 */

import { PlanRefusedError } from "./errors.js";
import { REDACTED, encodeValue } from "./values.js";

const TOLERANCE = 1e-9;
const ROUND_UP = 1 + 1e-12;
export const REDACTED_KEY = encodeValue(REDACTED);

/** What devices check a plan or pair queries against (the pinned fields of the spec). */
export interface Floors {
  id: string;
  min_k: number;
  max_budget: number;
  setting?: string;
  bound_method?: string;
}

function refuse(what: string, collection: string, why: string): never {
  throw new PlanRefusedError(`the ${what} of ${JSON.stringify(collection)} is refused: ${why}; nothing is sent for it`);
}

const isInt = (x: unknown): x is number => typeof x === "number" && Number.isInteger(x);
const isReal = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);
const isObject = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);

/** The floors every device checks: collection, k, budget and bound (the Python ``_floors``). */
export function checkFloors(what: string, spec: Floors, collection: unknown, k: unknown, budget: unknown, bound: unknown): void {
  if (collection !== spec.id) refuse(what, spec.id, `it is for collection ${JSON.stringify(collection)}`);
  if (!isInt(k) || k < spec.min_k) refuse(what, spec.id, `k = ${String(k)} is below the collection's floor min_k = ${spec.min_k}`);
  if (!isReal(budget) || budget < 0 || budget > spec.max_budget + 1e-12) {
    refuse(what, spec.id, `budget ${String(budget)} is above the collection's ceiling max_budget = ${spec.max_budget}`);
  }
  if (!isReal(bound) || bound < 0 || bound > budget + 1e-12) refuse(what, spec.id, `its bound ${String(bound)} is above its budget ${budget}`);
}

/**
 * The published counts of ``columns`` as sorted positive counts per column, and their users n.
 * Throws a refusal when a count is not a whole number >= 0 or the columns' totals differ (each
 * user sends one message per column).
 */
function parseCounts(what: string, cid: string, counts: Record<string, unknown>, columns: string[]): { sorted: number[][]; n: number } {
  const sorted: number[][] = [];
  let n = -1;
  for (const c of columns) {
    const per = counts[c];
    if (!isObject(per)) refuse(what, cid, `its published counts do not parse (column ${JSON.stringify(c)} is not {value: users})`);
    const xs = Object.values(per);
    if (!xs.every((x) => isInt(x) && x >= 0)) refuse(what, cid, `its published counts do not parse (column ${JSON.stringify(c)} has a count that is not a whole number >= 0)`);
    const kept = (xs as number[]).filter((x) => x > 0).sort((a, b) => a - b);
    const total = kept.reduce((a, b) => a + b, 0);
    if (kept.length === 0) refuse(what, cid, `its published counts do not parse (column ${JSON.stringify(c)} counts no user)`);
    if (n >= 0 && total !== n) refuse(what, cid, `its published counts do not parse (the columns count different numbers of users: ${n} and ${total})`);
    n = total;
    sorted.push(kept);
  }
  return { sorted, n };
}

/** min over r of sum_j s_j[r_j] / n + tau exp(sum_j logw_j[r_j]), exact (see the module comment). */
function upperMin(options: { s: number[]; logw: number[] }[], n: number, tau: number): number {
  if (tau <= 0) return 0;
  // best[s] = the smallest sum of log w reaching a sacrificed total of s users
  let best = new Float64Array(n + 1).fill(Infinity);
  best[0] = 0;
  for (const opt of options) {
    const next = new Float64Array(n + 1).fill(Infinity);
    for (let s = 0; s <= n; s++) {
      const lw = best[s]!;
      if (lw === Infinity) continue;
      for (let r = 0; r < opt.s.length; r++) {
        const t = s + opt.s[r]!;
        if (t > n) continue;
        const v = lw + opt.logw[r]!;
        if (v < next[t]!) next[t] = v;
      }
    }
    best = next;
  }
  let u = Infinity;
  for (let s = 0; s <= n; s++) if (best[s]! < Infinity) u = Math.min(u, s / n + tau * Math.exp(best[s]!));
  return Math.min(1, u * ROUND_UP);
}

/**
 * The joint-exposure bound at ``k`` from single-column counts (each sorted ascending) of ``n``
 * users: ``support``, ``theorem2``, ``theorem3`` or ``best`` (their minimum), as the Python
 * ``sdckit.risk.joint_exposure_bound`` without blocks.
 */
export function jointExposureBound(sorted: number[][], n: number, k: number, method = "best"): number {
  if (sorted.length === 0) return n <= k - 1 ? 1 : 0; // one group of n users
  const tau = (k - 1) / n;
  if (tau <= 0) return 0;
  const results: number[] = [];
  if (method === "support" || method === "best") {
    const logM = sorted.reduce((a, c) => a + Math.log(c.length), 0);
    results.push(Math.min(1, tau * Math.exp(Math.min(logM, 700)) * ROUND_UP));
  }
  for (const kind of ["theorem2", "theorem3"]) {
    if (method !== kind && method !== "best") continue;
    const options = sorted.map((counts) => {
      const s: number[] = [0];
      for (let r = 1; r < counts.length; r++) s.push(s[r - 1]! + counts[r - 1]!);
      const logw = counts.map((c, r) => (kind === "theorem2" ? Math.log(counts.length - r) : Math.log(n) - Math.log(c)));
      return { s, logw };
    });
    results.push(upperMin(options, n, tau));
  }
  if (results.length === 0) throw new PlanRefusedError(`bound method ${JSON.stringify(method)} is not one this SDK recomputes`);
  return Math.min(...results);
}

/**
 * Theorem-2 choices of a pair (or larger) block as one feature (the Python ``block_options``):
 * family A sacrifices every redacted user and the r rarest known cells (W = known - r); family B
 * keeps the redacted users as at most ``redactedCells`` unknown cells (W = known - r + that).
 * A redacted cell of x users holds at most min(x, prod of its redacted columns' supports) cells.
 */
function blockOptions(cells: unknown[][], columns: string[], support: Record<string, number>): { s: number[]; logw: number[] } {
  const known: number[] = [];
  let red = 0;
  let redCells = 0;
  for (const cell of cells) {
    const x = cell[cell.length - 1] as number;
    if (!(x > 0)) continue;
    const keys = cell.slice(0, -1);
    if (keys.includes(REDACTED_KEY)) {
      red += x;
      let prod = 1;
      keys.forEach((k, j) => {
        if (k === REDACTED_KEY) prod *= support[columns[j]!] ?? 1;
      });
      redCells += Math.min(x, prod);
    } else known.push(x);
  }
  known.sort((a, b) => a - b);
  const m = known.length;
  const csum = [0];
  for (const x of known) csum.push(csum[csum.length - 1]! + x);
  const s: number[] = [];
  const logw: number[] = [];
  for (let r = 0; r < m; r++) {
    s.push(red + csum[r]!);
    logw.push(Math.log(m - r));
  }
  if (red) {
    for (let r = 0; r <= m; r++) {
      s.push(csum[r]!);
      logw.push(Math.log(m - r + Math.max(1, redCells)));
    }
  }
  if (s.length === 0) return { s: [0], logw: [0] };
  return { s, logw };
}

/**
 * The bound over partitions of the planned columns into known blocks (each block one feature,
 * Theorem 2; single columns as themselves), and a block equal to all the columns by its own
 * exposure: the Python ``best`` with blocks, without its conditioning on a root column (so this
 * value can be above Python's, never below a valid bound). Up to 12 columns.
 */
function blockBound(columns: string[], sorted: number[][], blocks: unknown[], n: number, k: number, support: Record<string, number>): number {
  const thr = k - 1;
  if (thr <= 0 || columns.length > 12) return Infinity;
  const tau = thr / n;
  const parsed: { cols: string[]; cells: unknown[][] }[] = [];
  for (const b of blocks) {
    if (!isObject(b) || !Array.isArray(b["columns"]) || !Array.isArray(b["cells"])) continue;
    const cols = (b["columns"] as unknown[]).map(String);
    if (!cols.every((c) => columns.includes(c))) continue;
    parsed.push({ cols, cells: (b["cells"] as unknown[]).filter(Array.isArray) as unknown[][] });
  }
  let best = Infinity;
  for (const b of parsed) {
    if (b.cols.length !== columns.length) continue;
    let exposed = 0;
    for (const cell of b.cells) {
      const x = cell[cell.length - 1] as number;
      const keys = cell.slice(0, -1);
      if (keys.includes(REDACTED_KEY)) {
        let prod = 1;
        keys.forEach((key, j) => {
          if (key === REDACTED_KEY) prod *= support[b.cols[j]!] ?? 1;
        });
        exposed += Math.min(x, thr * Math.min(x, prod));
      } else if (x <= thr) exposed += x;
    }
    best = Math.min(best, exposed / n);
  }
  const singleOpt = sorted.map((counts) => {
    const s: number[] = [0];
    for (let r = 1; r < counts.length; r++) s.push(s[r - 1]! + counts[r - 1]!);
    return { s, logw: counts.map((_, r) => Math.log(counts.length - r)) };
  });
  const blockOpt = parsed.map((b) => blockOptions(b.cells, b.cols, support));
  const used = new Set<string>();
  const parts: { s: number[]; logw: number[] }[] = [];
  const walk = (): void => {
    const next = columns.find((c) => !used.has(c));
    if (next === undefined) {
      best = Math.min(best, upperMin(parts, n, tau));
      return;
    }
    used.add(next);
    parts.push(singleOpt[columns.indexOf(next)]!);
    walk();
    parts.pop();
    used.delete(next);
    parsed.forEach((b, i) => {
      if (!b.cols.includes(next) || b.cols.some((c) => used.has(c))) return;
      b.cols.forEach((c) => used.add(c));
      parts.push(blockOpt[i]!);
      walk();
      parts.pop();
      b.cols.forEach((c) => used.delete(c));
    });
  };
  walk();
  return Math.min(1, best * ROUND_UP);
}

/**
 * Recompute a plan's bound from the counts published with it and refuse the plan
 * (:class:`PlanRefusedError`) when its claim is below what they give (plus its allowances) or
 * above its budget; returns the recomputed bound. The floors, the collection and the setting are
 * checked too. ``plan`` is the signed plan's document.
 */
export function verifyPlanBound(plan: Record<string, unknown>, spec: Floors): number {
  const what = "plan";
  const cid = spec.id;
  checkFloors(what, spec, plan["collection"], plan["k"], plan["budget"], plan["bound"]);
  const k = plan["k"] as number;
  const budget = plan["budget"] as number;
  const claimed = plan["bound"] as number;
  const setting = plan["setting"] ?? "fixed";
  if (setting !== (spec.setting ?? "fixed")) refuse(what, cid, `its setting ${JSON.stringify(setting)} is not the collection's ${JSON.stringify(spec.setting ?? "fixed")}`);
  const columns = plan["columns"];
  if (!Array.isArray(columns) || !columns.every((c) => typeof c === "string")) refuse(what, cid, "its columns are not a list of names");
  if (columns.length === 0) return 0;
  const ev = isObject(plan["evidence"]) ? plan["evidence"] : {};
  const counts = ev["counts"];
  if (!isObject(counts) || Object.keys(counts).length !== columns.length || !columns.every((c) => Object.hasOwn(counts, c))) {
    refuse(what, cid, "it does not publish the counts of its columns, so its bound cannot be checked");
  }
  const { sorted, n } = parseCounts(what, cid, counts, columns as string[]);
  if (n !== plan["n_round1"] || n !== ev["n"]) refuse(what, cid, `its counts hold ${n} users but it says ${String(plan["n_round1"])}`);
  const recodings = isObject(plan["recodings"]) ? plan["recodings"] : {};
  for (const [c, mapping] of Object.entries(recodings)) {
    if (!isObject(mapping) || !isObject(counts[c])) refuse(what, cid, `the recoding of ${JSON.stringify(c)} is not {value: generalised value}`);
    const produced = new Set([...Object.values(mapping), REDACTED_KEY]);
    if (!Object.keys(counts[c] as object).every((key) => produced.has(key))) refuse(what, cid, `column ${JSON.stringify(c)} counts values its recoding cannot produce`);
  }
  if (setting === "statistical") refuse(what, cid, "its bound is a statistical-setting bound, which this SDK does not recompute");
  let bound = jointExposureBound(sorted, n, k, spec.bound_method ?? "best");
  if ((spec.bound_method ?? "best") === "best" && Array.isArray(ev["blocks"]) && ev["blocks"].length) {
    const support: Record<string, number> = {};
    (columns as string[]).forEach((c, j) => (support[c] = sorted[j]!.length));
    bound = Math.min(bound, blockBound(columns as string[], sorted, ev["blocks"], n, k, support));
    if (bound > claimed * (1 + TOLERANCE) + 1e-12) {
      refuse(what, cid, `it claims a bound of ${claimed} but its counts and pair tables give ${bound} (this SDK does not condition on a root column: use the Python client if that is where the claim comes from)`);
    }
  }
  const redactions = Array.isArray(plan["redactions"]) ? plan["redactions"] : [];
  if (redactions.length) {
    if (!redactions.every((r) => isObject(r) && columns.includes(r["feature"] as string))) refuse(what, cid, "a redaction rule names a column outside the plan");
    const delta = ev["delta"] ?? 0.05;
    if (!isReal(delta) || !(delta > 0 && delta < 1)) refuse(what, cid, "its delta is out of range");
    // the decoys' allowance k D / n with D <= mu + L/3 + sqrt(L^2/9 + 2 mu L) (Bernstein), mu <= k per rule
    const mu = redactions.length * Math.min(k, n);
    const L = Math.log(1 / delta);
    const dMax = Math.ceil(mu + L / 3 + Math.sqrt((L * L) / 9 + 2 * mu * L));
    bound += Math.min(1, (k * dMax) / n);
  }
  const moved = ev["moved"] ?? 0;
  if (!isInt(moved) || moved < 0) refuse(what, cid, "its count of moved messages is not a count");
  if (moved) bound += Math.min(1, (k * moved) / n);
  if (bound > claimed * (1 + TOLERANCE) + 1e-12) refuse(what, cid, `it claims a bound of ${claimed} but its own counts give ${bound}`);
  if (bound > budget + 1e-12) refuse(what, cid, `its counts give a bound of ${bound}, above its budget ${budget}`);
  return bound;
}

/**
 * Recompute each pair query's bound (``best``, on the published counts of its two columns) and
 * refuse the queries when one claims less, when their sum exceeds the budget, or when a published
 * value is held by fewer than k users (it would be sent in clear); returns the sum (capped at 1).
 */
export function verifyPairsBound(queries: Record<string, unknown>, spec: Floors): number {
  const what = "pair queries";
  const cid = spec.id;
  checkFloors(what, spec, queries["collection"], queries["k"], queries["budget"], queries["bound"]);
  const k = queries["k"] as number;
  const list = Array.isArray(queries["queries"]) ? (queries["queries"] as Record<string, unknown>[]) : [];
  if (list.length === 0) return 0;
  const cols = [...new Set(list.flatMap((q) => (Array.isArray(q["columns"]) ? (q["columns"] as string[]) : [])))].sort();
  const ev = isObject(queries["evidence"]) ? queries["evidence"] : {};
  if (Object.keys(ev).length !== cols.length || !cols.every((c) => Object.hasOwn(ev, c))) {
    refuse(what, cid, "they do not publish the counts of their columns, so their bounds cannot be checked");
  }
  for (const c of cols) {
    const per = ev[c];
    if (isObject(per) && Object.entries(per).some(([key, x]) => key !== REDACTED_KEY && isReal(x) && x < k)) {
      refuse(what, cid, `column ${JSON.stringify(c)} publishes a value held by fewer than k = ${k} users`);
    }
  }
  const { sorted, n } = parseCounts(what, cid, ev, cols);
  let total = 0;
  for (const q of list) {
    const qc = q["columns"] as string[];
    const b = jointExposureBound(qc.map((c) => sorted[cols.indexOf(c)]!), n, k, "best");
    const claim = q["bound"] ?? 0;
    if (!isReal(claim) || b > claim * (1 + TOLERANCE) + 1e-12) refuse(what, cid, `query ${JSON.stringify(qc)} claims a bound of ${String(claim)} but the counts give ${b}`);
    total += b;
  }
  if (Math.min(1, total) > (queries["budget"] as number) + 1e-12) refuse(what, cid, `their bounds add up to ${total}, above the budget ${String(queries["budget"])}`);
  return Math.min(1, total);
}
