/**
 * Money and dates as the workflow domain stores them: amounts are decimal strings (never JS floats),
 * currencies are ISO 4217 codes, dates are ISO 8601.
 */
import { Type } from "@sinclair/typebox";

/** Active ISO 4217 alphabetic codes (plus XAU/XAG/XDR and friends used in finance). */
export const ISO_4217 = new Set(
  (
    "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD BTN BWP BYN BZD " +
    "CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP " +
    "GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW " +
    "KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN " +
    "NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL " +
    "SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES " +
    "VND VUV WST XAF XAG XAU XBA XBB XBC XBD XCD XCG XDR XOF XPD XPF XPT XSU XTS XUA XXX YER ZAR ZMW ZWG ZWL"
  ).split(" "),
);

/** A non-negative decimal amount as a string: digits, optionally a point and more digits. */
export const Decimal = Type.String({ pattern: "^(0|[1-9][0-9]{0,29})(\\.[0-9]{1,18})?$", description: 'a decimal number as a string, e.g. "1200.50"' });

/**
 * A workflowitem's amount as TruBudget accepts it: signed, and with commas grouping the integer part by
 * thousands (`-1,000.50`). The stored form is canonical (`-1000.50`): `normalizeAmount` strips the
 * grouping and the space after the sign before the record is validated, so only canonical amounts are
 * ever stored; anything else (a decimal comma `12,5`, groups of two) is refused naming the field.
 */
export const AMOUNT_INPUT = "^-?\\s?(0|[1-9][0-9]{0,29}|[1-9][0-9]{0,2}(,[0-9]{3}){1,9})(\\.[0-9]{1,18})?$";
export const Amount = Type.String({
  pattern: AMOUNT_INPUT,
  description: 'a signed decimal number as a string, e.g. "-1000.50"; commas may group thousands on input ("-1,000.50"), the stored form has none ("-1000.50")',
});
const AMOUNT_RE = new RegExp(AMOUNT_INPUT);

/** The canonical form of an amount given in TruBudget's syntax; other values are returned unchanged (validation names them). */
export function normalizeAmount(value: unknown): unknown {
  if (typeof value !== "string" || !AMOUNT_RE.test(value)) return value;
  const canonical = value.replace(/[\s,]/g, "");
  return /^-0(\.0+)?$/.test(canonical) ? canonical.slice(1) : canonical;
}

/** A strictly positive decimal (exchange rates). */
export const PositiveDecimal = Type.String({ pattern: "^(0\\.[0-9]*[1-9][0-9]*|[1-9][0-9]{0,29}(\\.[0-9]{1,18})?)$", description: "a positive decimal number as a string" });
/** The exchange rate a workflowitem with an amount gets when none is given (TruBudget's default). */
export const DEFAULT_EXCHANGE_RATE = "1.0";
export const CurrencyCode = Type.String({ pattern: "^[A-Z]{3}$", description: 'an ISO 4217 currency code, e.g. "EUR"' });
export const IsoDate = Type.String({
  pattern: "^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2}))?$",
  description: 'an ISO 8601 date or date-time, e.g. "2026-12-31"',
});

export function isCurrency(code: unknown): boolean {
  return typeof code === "string" && ISO_4217.has(code);
}

export function isValidDate(s: unknown): boolean {
  if (typeof s !== "string") return false;
  const m = /^(\d{4})-(\d{2})-(\d{2})/.exec(s);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const day = new Date(Date.UTC(y, mo - 1, d));
  return day.getUTCFullYear() === y && day.getUTCMonth() === mo - 1 && day.getUTCDate() === d && !Number.isNaN(Date.parse(s));
}
