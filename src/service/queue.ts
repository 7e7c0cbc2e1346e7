/**
 * The bounded forward queue, counted in spans. The receiver asks {@link SpanQueue.canAccept}
 * before it processes a request, so a full queue turns into a 429/503 the client retries, never
 * into spans accepted and then lost.
 */

import type { ExportBody } from './transport.js';

/** One export's worth of spans in the downstream's encoding. */
export interface QueueItem {
  /** Spans in this item. */
  spans: number;
  /**
   * The ExportTraceServiceRequest in protobuf. Encoded protobuf messages of one type merge by
   * concatenation (repeated fields append), so items join into one export without re-encoding;
   * in parts written back to back (a spliced request), or one buffer.
   */
  protobuf?: ExportBody;
  /** The decoded request (OTLP/JSON shape), when the downstream speaks JSON; merged before encoding. */
  request?: unknown;
  /** A pass-through request (metrics, logs) in OTLP/JSON, sent alone as it came. */
  json?: Uint8Array;
  /**
   * The request body this item's bytes point into, when it may be pooled memory: given back
   * (`ForwarderOptions.finished`) once the export that carried them is over.
   */
  lease?: Uint8Array;
  /** Keys of the resolved verdicts this item's spans carry (`rebuild.ts`), settled once it is delivered. */
  verdicts?: readonly string[];
}

/** A first-in first-out queue bounded by the number of spans it holds. */
export class SpanQueue {
  private readonly _items: QueueItem[] = [];
  private _head = 0;
  private _spans = 0;
  /** Spans reserved by requests being processed, so two requests cannot both take the last room. */
  private _reserved = 0;

  /** @param capacity Most spans held (queued + reserved). */
  constructor(readonly capacity: number) {}

  /** Spans queued now. */
  get size(): number {
    return this._spans;
  }

  /** Items queued now. */
  get length(): number {
    return this._items.length - this._head;
  }

  /** Reserves room for `spans`; false when the queue cannot take them. Release with {@link release}. */
  reserve(spans: number): boolean {
    if (this._spans + this._reserved + spans > this.capacity) return false;
    this._reserved += spans;
    return true;
  }

  /** Gives back a reservation (whether or not its spans were pushed). */
  release(spans: number): void {
    this._reserved = Math.max(0, this._reserved - spans);
  }

  /** True when `spans` more would fit. */
  canAccept(spans: number): boolean {
    return this._spans + this._reserved + spans <= this.capacity;
  }

  /** Adds an item. The caller has reserved room or accepts exceeding the bound by one item. */
  push(item: QueueItem): void {
    this._items.push(item);
    this._spans += item.spans;
  }

  /**
   * Takes items from the front until `maxSpans` would be exceeded (always at least one item, so an
   * item larger than `maxSpans` still moves). Empty array when the queue is empty.
   */
  take(maxSpans: number): QueueItem[] {
    const out: QueueItem[] = [];
    let spans = 0;
    while (this._head < this._items.length) {
      const next = this._items[this._head]!;
      if (out.length > 0 && spans + next.spans > maxSpans) break;
      out.push(next);
      spans += next.spans;
      this._items[this._head] = undefined as unknown as QueueItem;
      this._head++;
    }
    this._spans -= spans;
    // Compact now and then so the array does not grow without bound.
    if (this._head > 1024 && this._head * 2 > this._items.length) {
      this._items.splice(0, this._head);
      this._head = 0;
    }
    return out;
  }

  /** Removes and returns everything queued. */
  drain(): QueueItem[] {
    return this.take(Number.POSITIVE_INFINITY);
  }
}
