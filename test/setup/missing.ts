/** What a global setup does when the binaries of a backend are missing: fail under CI, else warn loudly. */
export function missingBinaries(message: string): void {
  if (process.env.CI === "true") throw new Error(`${message} (CI=true requires them)`);
  console.warn(`\n!!!!!!!!!!\n!!! ${message}\n!!!!!!!!!!\n`);
}
