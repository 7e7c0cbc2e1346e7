/**
 * A floor under V8's old-generation limit set from inside a running process: what
 * `node --initial-old-space-size` does, for a `continuity serve` that could not be started with it
 * (Node 20, which has no `process.execve` for bin/continuity.js to re-execute with the flag; an IPC
 * channel; an exec that failed).
 *
 * Why: V8 sets the limit for the next full collection at the old generation's size times a growing
 * factor, at least a few MiB above it. For the idle service's 17 MiB that is about 11 MiB of room,
 * and the requests queued for the downstream fill it: a full mark-compact every 50 to 100 requests
 * (docs/service.md, "Run it"). `--initial-old-space-size` is read once, when the heap is set up, and
 * makes it the lowest limit V8 ever sets; a running process cannot change it. The factor is another
 * matter: V8 reads `--heap-growing-percent` (the factor as 1 + percent / 100, 0 for its own) each
 * time it computes a limit after a full collection. So after each full collection, while the old
 * generation is under half the floor, the factor is set to take the next limit to the floor; over
 * that, V8's own factor applies again. (Under half the floor the factor set is 2 or more, where
 * V8's own might have been smaller; over half, the limit can be under the floor, where the flag
 * would have kept it at the floor. Measured, 200 requests of the stress mix: 3 or 4 full
 * collections without a floor, none with either.)
 */
import { PerformanceObserver, constants as perfConstants } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

const MiB = 1024 * 1024;
/** The highest factor set, as a percent (V8 takes an int): 1 + 2000 / 100 = 21 times the heap. */
const MAX_PERCENT = 2000;

/**
 * The `--heap-growing-percent` that makes V8's next limit after a full collection reach
 * `floorBytes` from an old generation of `oldBytes`, rounded up to a multiple of 25 (so small
 * changes of the heap do not reset the flag each time); 0 (V8's own factor) once the old
 * generation is half the floor or more. Pure.
 */
export function floorGrowingPercent(oldBytes: number, floorBytes: number): number {
  if (floorBytes <= 0 || oldBytes * 2 >= floorBytes) return 0;
  const exact = (floorBytes / Math.max(oldBytes, MiB) - 1) * 100;
  return Math.min(MAX_PERCENT, Math.ceil(exact / 25) * 25);
}

/** The old generation's size now: every heap space but the young generation's, bytes. */
function oldGenerationBytes(): number {
  let n = 0;
  for (const s of getHeapSpaceStatistics()) {
    if (s.space_name !== 'new_space' && s.space_name !== 'new_large_object_space') n += s.space_used_size;
  }
  return n;
}

/** A floor applied at run time; `stop()` gives V8 its own factor back. */
export interface RuntimeHeapFloor {
  /** The `--heap-growing-percent` in force now (0: V8's own factor). */
  readonly percent: number;
  stop(): void;
}

/**
 * Keeps V8's old-generation limit at `floorMb` MiB or more while the heap is small, from inside
 * the process (see the module comment). Undefined when `floorMb` is 0. Never throws: a V8 that
 * refuses the flag leaves the process as it was.
 */
export function applyRuntimeHeapFloor(floorMb: number): RuntimeHeapFloor | undefined {
  if (floorMb <= 0) return undefined;
  const floor = floorMb * MiB;
  let percent = 0;
  const adjust = () => {
    const next = floorGrowingPercent(oldGenerationBytes(), floor);
    if (next === percent) return;
    try {
      setFlagsFromString(`--heap-growing-percent=${next}`);
      percent = next;
    } catch {
      // A V8 that freezes its flags after start: nothing changes.
    }
  };
  adjust();
  // A full collection computes the next limit from the flag in force; this one sets it for the
  // next, from the heap the last one left (it changes slowly).
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if ((e as { detail?: { kind?: number } }).detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) {
        adjust();
        return;
      }
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    get percent() {
      return percent;
    },
    stop() {
      observer.disconnect();
      try {
        setFlagsFromString('--heap-growing-percent=0');
      } catch {
        // as above
      }
      percent = 0;
    },
  };
}

/** The environment variable that sets the floor `serve` starts with, in MiB (0: none); bin/continuity.js reads it too. */
export const HEAP_FLOOR_ENV = 'CONTINUITY_SERVE_HEAP_FLOOR_MB';
/** The floor when the variable is unset, MiB. */
export const HEAP_FLOOR_DEFAULT_MB = 128;

/**
 * The floor in MiB from {@link HEAP_FLOOR_ENV}'s value (the default when unset or blank), or
 * undefined when it is not a whole number from 0 to 1048576 (bin/continuity.js refuses it, exit 2).
 */
export function heapFloorMb(raw: string | undefined): number | undefined {
  const mb = raw === undefined || raw.trim() === '' ? HEAP_FLOOR_DEFAULT_MB : Number(raw);
  return Number.isInteger(mb) && mb >= 0 && mb <= 1048576 ? mb : undefined;
}

/** True when the node command line already sets the heap's initial size (the real floor). */
export function commandLineHeapFloor(execArgv: readonly string[]): boolean {
  return execArgv.some((a) => /^--initial-(old-space|heap)-size(=|$)/.test(a));
}
