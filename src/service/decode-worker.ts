/**
 * The body decoder thread's worker (see ./decode-thread.ts): decodes each body it is sent with
 * the same code the event loop would use, one at a time in the order sent, and sends back the
 * decoded body (transferred) or the {@link BodyError} to answer.
 */
import { parentPort } from 'node:worker_threads';
import { BodyError, decodeInProcess, ownedArrayBuffer } from './body.js';
import type { DecodeAnswer, DecodeJob } from './decode-thread.js';

parentPort!.on('message', (job: DecodeJob) => {
  let answer: DecodeAnswer;
  try {
    const out = decodeInProcess(Buffer.from(job.body), job.coding, job.maxBytes);
    answer = { id: job.id, ok: true, body: ownedArrayBuffer(out) };
  } catch (e) {
    answer =
      e instanceof BodyError
        ? { id: job.id, ok: false, status: e.status, code: e.code, message: e.message }
        : { id: job.id, ok: false, internal: `the decoder failed (${(e as Error).name})` };
  }
  parentPort!.postMessage(answer, answer.ok ? [answer.body] : []);
});

// Loaded and listening: bodies may come.
parentPort!.postMessage({ ready: true });
