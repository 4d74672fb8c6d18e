/**
 * Anonymous credentials per round (the Python ``sdckit.protocol._enrol``): RFC 9497 VOPRF,
 * ristretto255-SHA512, with ``@cloudflare/voprf-ts`` on ``@noble/curves``.
 *
 * A device picks a random 32-byte nonce per round and blinds the token input
 * ``"sdckit/token/v1|<collection>|round=<r>|" + nonce`` for rounds 1, 2 and 3 (the pair round), in
 * that order. The shuffler answers each round with ``DLEQ proof (c 32 || s 32) || evaluated
 * element (32)`` (base64url; the ``voprf`` crate's batch output of one element), proved against
 * its published key of that round; the device's credential is
 * ``(nonce, output)``, sent as ``<base64url nonce>.<base64url output>`` (no padding).
 */

import { DLEQProof, Evaluation, type FinalizeData, Oprf, VOPRFClient } from "@cloudflare/voprf-ts";
import { CryptoNoble } from "@cloudflare/voprf-ts/crypto-noble";

import { b64url, concat, randomBytes, unb64url, utf8 } from "./bytes.js";
import { MalformedMessageError } from "./errors.js";

export const SUITE = Oprf.Suite.RISTRETTO255_SHA512;
export const ENROL_ROUNDS = [1, 2, 3] as const;
export const NONCE_LENGTH = 32;
export const OUTPUT_LENGTH = 64;
const ELEMENT = 32;
const PROOF = 64;
export const CRYPTO = CryptoNoble;

/** The VOPRF input of a round's credential (binds it to one collection and round). */
export function tokenInput(collection: string, round: number, nonce: Uint8Array): Uint8Array {
  return concat(utf8(`sdckit/token/v1|${collection}|round=${round}|`), nonce);
}

/** A device's credential for one round. */
export class Credential {
  constructor(
    readonly round: number,
    readonly nonce: Uint8Array,
    readonly output: Uint8Array,
  ) {}

  toText(): string {
    return `${b64url(this.nonce)}.${b64url(this.output)}`;
  }
}

interface Pending {
  round: number;
  nonce: Uint8Array;
  client: VOPRFClient;
  finData: FinalizeData;
  blinded: string;
}

/** A pending enrolment of one device: :attr:`blinded` goes to the shuffler, :meth:`finish` takes its answer. */
export class Enrolment {
  private constructor(
    readonly collection: string,
    private readonly pending: Pending[],
  ) {}

  /** Blind one token input per round of ``rounds`` (a prefix of 1, 2, 3) with each round's key. */
  static async start(
    collection: string,
    issuerKeys: Record<string, string>,
    rounds: readonly number[] = ENROL_ROUNDS,
  ): Promise<Enrolment> {
    const pending: Pending[] = [];
    for (const round of rounds) {
      const key = unb64url(issuerKeys[String(round)] ?? "", `the issuer key of round ${round}`);
      const client = new VOPRFClient(SUITE, key, CRYPTO);
      const nonce = randomBytes(NONCE_LENGTH);
      const [finData, req] = await client.blind([tokenInput(collection, round, nonce)]);
      pending.push({ round, nonce, client, finData, blinded: b64url(req.blinded[0]!.serialize()) });
    }
    return new Enrolment(collection, pending);
  }

  /** The blinded inputs, one per round, in round order (base64url). */
  get blinded(): string[] {
    return this.pending.map((p) => p.blinded);
  }

  /** Unblind each round's answer and check its DLEQ proof against that round's published key. */
  async finish(evaluated: Record<string, unknown>): Promise<Record<number, Credential>> {
    const out: Record<number, Credential> = {};
    for (const p of this.pending) {
      let output: Uint8Array | undefined;
      try {
        const raw = unb64url(String(evaluated[String(p.round)] ?? ""), `the round-${p.round} evaluation`);
        if (raw.length !== ELEMENT + PROOF) throw new Error("length");
        const group = p.client.group;
        const ev = new Evaluation(
          Oprf.Mode.VOPRF,
          [group.desElt(raw.subarray(PROOF))],
          DLEQProof.deserialize(group.id, raw.subarray(0, PROOF), CRYPTO),
        );
        [output] = await p.client.finalize(p.finData, ev);
      } catch {
        output = undefined;
      }
      if (!output || output.length !== OUTPUT_LENGTH) {
        throw new MalformedMessageError(
          `the enrolment answer for round ${p.round} does not verify against the shuffler's published issuer key of that round`,
        );
      }
      out[p.round] = new Credential(p.round, p.nonce, output);
    }
    return out;
  }
}
