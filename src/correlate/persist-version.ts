/** The version of the exported pending-state format (zod-free: the correlator writes it on export). */
export const PENDING_STATE_VERSION = 1 as const;
