/** Types of scripts/stack/toolchain.js (plain JavaScript, shared by the stack suite and bench). */
export declare const STACK_VERSIONS: {
  collector: string;
  collectorStable: string;
  collectorContrib: string;
  builder: string;
  jaeger: string;
  go: string;
  pythonOtel: string;
};
export declare const BUILDER_CONFIG: string;
export declare function stackCacheRoot(env?: NodeJS.ProcessEnv): string;
export declare function requireGo(): string;
export declare function compareVersions(a: string, b: string): number;
export interface Artefact {
  path: string;
  builtMs: number | null;
}
export declare function ensureBuilder(): Promise<Artefact>;
export declare function ensureCollector(): Promise<Artefact & { builderBuiltMs: number | null }>;
export declare function ensureJaeger(): Promise<Artefact>;
export declare function ensurePythonVenv(): Promise<Artefact>;
export declare function ensureStack(): Promise<{
  collector: Artefact & { builderBuiltMs: number | null };
  jaeger: Artefact;
  python: Artefact;
}>;
