/**
 * The passphrase prompt: read only from the controlling terminal (`/dev/tty`), with echo off.
 *
 * Never from an environment variable, an argument, standard input, a file or a cached agent:
 * those are all places a process without a human can fill. A terminal is not proof of a human
 * by itself (a process can open a pseudo-terminal), but the passphrase is: it is typed by the
 * person who chose it, for each signature, and stored nowhere.
 */
import { openSync } from 'node:fs';
import { ReadStream, WriteStream } from 'node:tty';

/** No controlling terminal to read a passphrase from. */
export class NoTerminalError extends Error {
  constructor(what: string) {
    super(
      `${what}: no terminal: the passphrase is read only from the controlling terminal (/dev/tty), never from arguments, the environment or standard input; run it yourself in a terminal`,
    );
    this.name = 'NoTerminalError';
  }
}

/** The person at the terminal gave up (Ctrl-C or Ctrl-D). */
export class PromptAbortedError extends Error {
  constructor(what: string) {
    super(`${what}: cancelled at the terminal; nothing was signed`);
    this.name = 'PromptAbortedError';
  }
}

/** An open controlling terminal. */
export interface Terminal {
  /** Writes text (a description, a prompt) to the terminal, not to standard output. */
  say(text: string): void;
  /** Reads one line with echo off. */
  secret(prompt: string): Promise<string>;
  close(): void;
}

/**
 * Opens the controlling terminal; throws {@link NoTerminalError} when the process has none (no
 * `/dev/tty`, or it cannot be opened: `ENXIO` for a process without a controlling terminal).
 */
export function openTerminal(what: string): Terminal {
  let inFd: number;
  let outFd: number;
  try {
    inFd = openSync('/dev/tty', 'r');
    outFd = openSync('/dev/tty', 'w');
  } catch {
    throw new NoTerminalError(what);
  }
  const input = new ReadStream(inFd);
  const output = new WriteStream(outFd);
  if (!input.isTTY) throw new NoTerminalError(what);
  return {
    say: (text) => {
      output.write(text);
    },
    secret: (prompt) =>
      new Promise<string>((resolve, reject) => {
        // Echo off before the prompt shows: what is typed the moment it appears is never echoed.
        input.setRawMode(true);
        output.write(prompt);
        let line = '';
        const done = (err?: Error) => {
          input.off('data', onData);
          input.setRawMode(false);
          input.pause();
          output.write('\n');
          if (err) reject(err);
          else resolve(line);
        };
        const onData = (chunk: Buffer) => {
          for (const ch of chunk.toString('utf8')) {
            if (ch === '\r' || ch === '\n') return done();
            if (ch === '\u0003' || ch === '\u0004') return done(new PromptAbortedError(what));
            if (ch === '\u007f' || ch === '\b') line = line.slice(0, -1);
            else if (ch >= ' ') line += ch;
          }
        };
        input.on('data', onData);
        input.resume();
      }),
    close: () => {
      input.destroy();
      output.destroy();
    },
  };
}

/** Asks for a new passphrase twice; rejects a short one or two that differ (the person retries). */
export async function newPassphrase(term: Terminal, what: string, minLength: number): Promise<string> {
  for (let tries = 0; tries < 3; tries++) {
    const a = await term.secret('New approver passphrase: ');
    if (a.length < minLength) {
      term.say(`At least ${minLength} characters, please.\n`);
      continue;
    }
    const b = await term.secret('Type it again: ');
    if (a === b) return a;
    term.say('The two did not match.\n');
  }
  throw new PromptAbortedError(what);
}
