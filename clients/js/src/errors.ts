/** Errors the SDK raises: each names what was refused and why (nothing is sent after one). */

/** A document, key or answer that does not parse or does not carry its owner's signature. */
export class MalformedMessageError extends Error {
  override name = "MalformedMessageError";
}

/** A request the protocol refuses (HTTP 4xx/5xx after the retries, a key that is not pinned). */
export class ProtocolError extends Error {
  override name = "ProtocolError";
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** A plan or pair queries below the collection's pinned floors: nothing is sent for them. */
export class PlanRefusedError extends ProtocolError {
  override name = "PlanRefusedError";
}

/** A value, suite or argument the SDK cannot use (the message says what to give instead). */
export class ParameterError extends Error {
  override name = "ParameterError";
}

/** A collection spec that does not pin every party's HPKE key (curator, analyst, shuffler). */
export class UnpinnedSpecError extends ProtocolError {
  override name = "UnpinnedSpecError";
}
