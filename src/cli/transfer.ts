/** Export and import of a whole store: the composition root's (flowstore/transfer.ts), which the CLI and the server share. */
export * from "../flowstore/transfer.js";
