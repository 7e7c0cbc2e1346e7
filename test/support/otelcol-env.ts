/**
 * The Collector's environment placeholders in collector-config/ (`${env:NAME:-default}`, its env
 * provider's syntax), resolved the way the Collector resolves them, for the tests that read the
 * shipped YAML without running a Collector (`npm run test:stack` runs the real one on the same
 * files). A placeholder without a default and without a value is an error, as in the Collector.
 */
const PLACEHOLDER = /\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** `text` with every `${env:NAME:-default}` replaced by `env[NAME]`, else its default. */
export function expandEnvPlaceholders(text: string, env: Record<string, string | undefined> = {}): string {
  return text.replace(PLACEHOLDER, (whole, name: string, fallback: string | undefined) => {
    const value = env[name] ?? fallback;
    if (value === undefined) throw new Error(`${whole}: ${name} is not set and has no default`);
    return value;
  });
}

/** The names of every placeholder in `text`, in order of first appearance. */
export function envPlaceholderNames(text: string): string[] {
  return [...new Set([...text.matchAll(PLACEHOLDER)].map((m) => m[1]!))];
}
