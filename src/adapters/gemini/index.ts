/**
 * agent-continuity/gemini: the Gemini CLI adapter (hooks in `.gemini/settings.json`, the write
 * gate, the agent's restatement): the Claude Code adapter in Gemini's dialect, with compactions
 * confirmed from Gemini's own conversation file. Explicit exports only.
 */
export { GEMINI_DIALECT, GEMINI_GATED_TOOLS, GEMINI_RUNTIME } from './config.js';
export { runGeminiHook } from './hook.js';
export { runGeminiInit } from './init.js';
export { runGeminiObserve } from './observe.js';
export { geminiCompactionEvidence, isGeminiTranscript, latestSummary } from './transcript.js';
