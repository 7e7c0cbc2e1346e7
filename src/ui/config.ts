/**
 * The `ui` section of `continuity serve`'s configuration (see docs/service.md), kept beside the
 * page so the service only embeds the schema (and builds the page with `continuityPageFromConfig`
 * in `page.ts`). zod only: `continuity serve --print-config` loads this without the page.
 */
import { z } from 'zod';

/** An http(s) URL without user info (the page never shows a credential). */
function isLinkUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.username === '' && u.password === '';
  } catch {
    return false;
  }
}

const LinkUrl = z
  .string({ error: 'expected an http:// or https:// URL' })
  .refine(isLinkUrl, { error: 'expected an http:// or https:// URL without user:password' });

const LinkTemplate = z
  .string({ error: 'expected a URL template with {traceId}' })
  .refine((s) => s.includes('{traceId}'), { error: 'expected a URL template with {traceId}' })
  .pipe(
    z.string().refine((s) => isLinkUrl(s.replaceAll('{traceId}', '0').replaceAll('{spanId}', '0')), {
      error: 'expected an http:// or https:// URL template without user:password',
    }),
  );

const Count = z
  .number({ error: 'expected a count (integer >= 1)' })
  .int({ error: 'expected a count (integer >= 1)' })
  .min(1, { error: 'expected a count (integer >= 1)' });

/** `ui:` in the service's configuration. */
export const UiConfigSchema = z
  .strictObject({
    /** Serve the continuity page on `/ui` (same listener as `/metrics`). Default true. */
    enabled: z.boolean({ error: 'expected true or false' }).default(true),
    /** Answer clients that are not on loopback, or that use a non-loopback Host name. Default false. */
    remote: z.boolean({ error: 'expected true or false' }).default(false),
    /** A link per boundary to its trace (set at most one). Default none. */
    traceLink: z
      .strictObject({
        /** Jaeger UI base URL, e.g. http://127.0.0.1:16686. */
        jaeger: LinkUrl.optional(),
        /** Tempo HTTP base URL, e.g. http://127.0.0.1:3200 (links to its trace-by-id API). */
        tempo: LinkUrl.optional(),
        /** Any URL with {traceId} (and optionally {spanId}), e.g. a Grafana Explore link. */
        template: LinkTemplate.optional(),
      })
      .superRefine((links, ctx) => {
        const set = Object.entries(links).filter(([, v]) => v !== undefined);
        if (set.length > 1)
          ctx.addIssue({
            code: 'custom',
            path: [set[1]![0]],
            message: 'set one of ui.traceLink.jaeger, .tempo or .template, not several',
          });
      })
      .prefault({}),
    /** Most sessions the page lists (the most recently active). Default 1000. */
    maxSessions: Count.default(1000),
    /**
     * The ledger to show beside the service's state (the one `continuity snapshot`/`approve` and
     * the hooks write), or false for none. Default: the CLI's default ledger (CONTINUITY_LEDGER,
     * else $XDG_STATE_HOME/agent-continuity/ledger.jsonl), read only when it exists.
     */
    ledger: z
      .union([z.string().min(1), z.literal(false)], { error: 'expected a ledger file path, or false' })
      .optional(),
  })
  .prefault({});

/** The validated `ui` section. */
export type UiConfig = z.output<typeof UiConfigSchema>;
