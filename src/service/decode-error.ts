/**
 * The two ways a compressed request body fails in the codecs written here (snappy framing, LZ4
 * frames): its decoded size would pass the limit, or it is not valid data. The body reader turns
 * them into a 413 and a 400 `bad_compression`.
 */

/** Why decoding stopped: `too_large` (over `maxBytes`) or `corrupt` (with a detail). */
export class DecodeError extends Error {
  override readonly name = 'DecodeError';
  readonly code: 'too_large' | 'corrupt';
  constructor(code: DecodeError['code'], detail: string) {
    super(detail);
    this.code = code;
  }
}

/** The data is not valid for its format; `detail` names what is wrong, never a byte of content. */
export function corrupt(detail: string): DecodeError {
  return new DecodeError('corrupt', detail);
}

/** The decoded body would be larger than the limit. */
export function tooLarge(): DecodeError {
  return new DecodeError('too_large', 'decoded size over the limit');
}
