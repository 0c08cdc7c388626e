/** The flowstore command's version (`flowstore --version`), as package.json states it (a test holds the two together). */
export const VERSION = "0.1.0";
