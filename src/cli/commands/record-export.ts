/**
 * Span export of the recording commands (`continuity snapshot`, `continuity approve`), so a
 * boundary recorded from a shell script or a non-Claude runtime reaches `continuity serve` (or a
 * collector running the processor) like one recorded by the SDK extension or the Claude Code hooks.
 *
 * Opt-in: only when an endpoint is configured, with `--otlp-endpoint URL` or
 * `CONTINUITY_OTLP_ENDPOINT` / `CONTINUITY_OTLP_TRACES_ENDPOINT` (and then the other
 * `CONTINUITY_OTLP_*` settings apply; `CONTINUITY_EXPORT=off` still turns it off). Without one,
 * nothing is sent and nothing is spooled: a script that only wants the ledger pays nothing.
 *
 * Best effort: the export runs after the ledger append succeeded and never changes the exit code.
 * A request that cannot be delivered goes to the spool beside the ledger (`<ledger>.spool/`, 0600
 * files in a 0700 directory), is reported in one line on stderr, and is sent, oldest first, by the
 * next recording command that exports.
 */
import { basename } from 'node:path';
import type { Command } from 'commander';
import { InputError } from '../../decision/problems.js';
import { isHttpUrl, resolveExportConfig } from '../../export/config.js';
import { type ExportReport, exportSpans } from '../../export/exporter.js';
import { CLI_SERVICE_NAME, type ExportSpan } from '../../export/spans.js';

/** The flag the recording commands accept for export. */
export interface ExportFlags {
  otlpEndpoint?: string;
}

/** Adds `--otlp-endpoint URL` to `cmd`. */
export function addExportOptions(cmd: Command): Command {
  return cmd.option(
    '--otlp-endpoint <url>',
    'export the recorded span over OTLP/HTTP to this base URL (/v1/traces appended; default: CONTINUITY_OTLP_ENDPOINT, else no export)',
  );
}

/** Refuses an `--otlp-endpoint` that is not an http(s) URL, before anything is recorded. */
export function checkExportFlags(command: string, flags: ExportFlags): void {
  if (flags.otlpEndpoint !== undefined && !isHttpUrl(flags.otlpEndpoint)) {
    throw new InputError(command, [
      { path: '--otlp-endpoint', message: 'expected an http(s) URL, e.g. http://127.0.0.1:4318' },
    ]);
  }
}

/** The spool of the recording commands: beside the ledger, like its other side files. */
export function cliSpoolDir(ledgerPath: string): string {
  return `${ledgerPath}.spool`;
}

function origin(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`; // never the path or any user:password part
  } catch {
    return 'the endpoint';
  }
}

/** Where {@link exportRecorded} reads its settings and writes its one line. */
export interface ExportContext {
  /** Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Receives the one-line report. Default: stderr, prefixed `continuity: `. */
  report?: (line: string) => void;
}

/**
 * Exports the spans of what a command just recorded in the ledger at `ledgerPath`, when an
 * endpoint is configured. Never throws; returns what happened (undefined when nothing was tried).
 */
export async function exportRecorded(
  spans: readonly ExportSpan[],
  flags: ExportFlags,
  ledgerPath: string,
  context: ExportContext = {},
): Promise<ExportReport | undefined> {
  const env = context.env ?? process.env;
  const say = context.report ?? ((line: string) => process.stderr.write(`continuity: ${line}\n`));
  try {
    const { config, warnings } = resolveExportConfig({
      env,
      ...(flags.otlpEndpoint !== undefined && {
        endpointFlag: { value: flags.otlpEndpoint, label: '--otlp-endpoint' },
      }),
    });
    const lines = [...warnings];
    if (!config.enabled) {
      if (lines.length > 0) say(`span not exported: ${lines.join('; ')}`);
      return undefined;
    }
    const spool = cliSpoolDir(ledgerPath);
    const report = await exportSpans(spans, config, {
      spoolDir: spool,
      serviceName: CLI_SERVICE_NAME,
      warn: (l) => lines.push(l),
    });
    if (report.spooled > 0) {
      lines.unshift(
        // The spool's name, not its absolute path: stderr may end up in a CI log.
        `OTLP export to ${origin(config.tracesUrl)} failed; span spooled in ${basename(spool)}/ beside the ledger (${report.waiting} request(s) waiting), sent by the next recording command with an endpoint`,
      );
    }
    if (lines.length > 0) say(lines.join('; '));
    return report;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException)?.code;
    const what = typeof code === 'string' ? code : String((e as Error)?.message ?? e).split('\n')[0];
    say(`span not exported (${what}); the ledger holds the evidence`);
    return undefined;
  }
}
