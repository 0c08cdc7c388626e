/** Export and import of a whole store: the composition root's (compose/transfer.ts), which the CLI and the server share. */
export * from "../compose/transfer.js";
