/**
 * Typed OTLP codec errors: a literal `code` for programs, a message naming the field path for people.
 */

/** Why a body could not be decoded or an object could not be encoded. */
export type OtlpErrorCode =
  /** The bytes are not a protobuf encoding of the expected message (truncated, corrupted, wrong type). */
  | 'invalid_protobuf'
  /** The text is not JSON, or not UTF-8, or its top level is not an object. */
  | 'invalid_json'
  /** A field has the wrong type, length or value, e.g. a trace id that is not 32 hex characters. */
  | 'invalid_field'
  /** Values are nested deeper than the codec's limit (100 levels, as protoc's default). */
  | 'too_deep'
  /** The format argument is neither `protobuf` nor `json`. */
  | 'unsupported_format';

/** An OTLP decode or encode failure. Never carries the payload itself, only where it went wrong. */
export class OtlpError extends Error {
  override readonly name = 'OtlpError';
  /** The failure kind. */
  readonly code: OtlpErrorCode;
  /** The field path, e.g. `resourceSpans[0].scopeSpans[1].spans[4].traceId`; `''` for the whole body. */
  readonly path: string;

  constructor(code: OtlpErrorCode, path: string, detail: string) {
    super(path ? `${path}: ${detail}` : detail);
    this.code = code;
    this.path = path;
  }
}
