/**
 * Request bodies read into reused memory. Why: a body of a few hundred KiB read into fresh memory
 * costs the process a page fault per 4 KiB the first time it is written (glibc gives buffers this
 * size their own mapping and returns it on free), and that first touch was the largest single
 * cost of reading a body: measured in `continuity serve` on 125 KB requests, 45 faults per
 * request and 50-110 µs of the event loop, against 17 faults with bodies read into memory used
 * before.
 *
 * The rule that makes reuse safe: memory goes back to the pool only through {@link BodyPool.give},
 * and the one caller that gives it back is the forwarder, once the export that carried the body's
 * bytes is over (every attempt settled, no write of them pending). A body that takes any other
 * path (decoded for a JSON downstream, refused, dropped at shutdown) is never given back and is
 * collected like any other buffer; not giving back is always safe, giving back early never is.
 */

/** Smallest body read into the pool: smaller ones arrive in one socket read and are not copied at all. */
export const POOLED_MIN_BYTES = 64 * 1024;
/** Largest body read into the pool (a larger one is rare enough to allocate). */
export const POOLED_MAX_BYTES = 4 * 1024 * 1024;
/** Most idle memory the pool keeps, bytes (what it holds beyond that goes to the garbage collector). */
export const POOL_IDLE_MAX_BYTES = 16 * 1024 * 1024;

/** Reusable memory for request bodies, in power-of-two slabs from 64 KiB to 4 MiB. */
export class BodyPool {
  /** Idle slabs by size class (index: log2 of the slab size). */
  private readonly _idle: ArrayBuffer[][] = [];
  private _idleBytes = 0;
  /** Slabs handed out and not given back: only these are taken back, and each only once. */
  private readonly _out = new WeakSet<ArrayBuffer>();

  constructor(private readonly _idleMaxBytes = POOL_IDLE_MAX_BYTES) {}

  /** Idle bytes held now. */
  get idleBytes(): number {
    return this._idleBytes;
  }

  /**
   * A buffer of exactly `size` bytes (its contents are whatever was there before: the caller
   * writes all of it), or undefined when `size` is outside the pooled range.
   */
  take(size: number): Buffer | undefined {
    if (!(size >= POOLED_MIN_BYTES && size <= POOLED_MAX_BYTES)) return undefined;
    const cls = Math.ceil(Math.log2(size));
    let slab = this._idle[cls]?.pop();
    if (slab) this._idleBytes -= slab.byteLength;
    else slab = new ArrayBuffer(2 ** cls);
    this._out.add(slab);
    return Buffer.from(slab, 0, size);
  }

  /**
   * Gives back a buffer {@link take} returned, once nothing reads or writes its bytes any more.
   * Anything else is ignored (a buffer not from this pool, one given back already, a detached
   * one), and so is a slab that would take the idle memory over its bound.
   */
  give(body: Uint8Array): void {
    const slab = body.buffer;
    if (!(slab instanceof ArrayBuffer) || !this._out.has(slab)) return;
    this._out.delete(slab);
    const n = slab.byteLength;
    if (n === 0 || this._idleBytes + n > this._idleMaxBytes) return;
    const cls = Math.log2(n);
    const idle = this._idle[cls] ?? [];
    this._idle[cls] = idle;
    idle.push(slab);
    this._idleBytes += n;
  }
}
