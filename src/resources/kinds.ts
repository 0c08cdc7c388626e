/** The partition kinds the resources layer writes besides each schema's owner types. */
export const RESOURCE_KINDS: readonly string[] = ["global", "sweeps"];
