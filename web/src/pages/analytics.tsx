/**
 * A project's budget analytics (issue 26, part 4): a bar chart (SVG) of projected, assigned and disbursed
 * per subproject, converted to the chosen currency at each amount's dated rate, the totals per currency
 * as a table, and the CSV and XLSX exports. The chart is a picture of the table beside it, which says
 * the same in words for whoever does not see it.
 */
import { useState } from "preact/hooks";
import type { Analytics, AnalyticsRow } from "../../../src/client/index.js";
import { client } from "../session.js";
import { ErrorBox, fmtAmount, saveBlob, useLoad } from "../ui.js";

const SERIES = [
  { key: "projected", label: "Projected", color: "#8a94a6" },
  { key: "assigned", label: "Assigned", color: "#2457c5" },
  { key: "disbursed", label: "Disbursed", color: "#067647" },
] as const;

/** A converted value as a number for the chart's scale only (every figure shown is the server's string). */
const num = (v: string | null | undefined): number => (v ? Number(v) : 0);

function Chart({ rows, currency }: { rows: AnalyticsRow[]; currency: string }) {
  const max = Math.max(1, ...rows.flatMap((r) => SERIES.map((s) => Math.abs(num(r.converted?.[s.key])))));
  const label = 170;
  const width = 640;
  const bar = 12;
  const group = SERIES.length * bar + 14;
  const height = rows.length * group + 28;
  const scale = (v: number) => (Math.abs(v) / max) * (width - label - 90);
  return (
    <svg class="chart" viewBox={`0 0 ${width} ${height}`} role="img" aria-labelledby="analytics-chart-title">
      <title id="analytics-chart-title">{`Projected, assigned and disbursed per subproject, in ${currency}`}</title>
      {rows.map((r, i) => {
        const y = i * group + 4;
        return (
          <g data-id={r.id}>
            <text x={label - 8} y={y + (SERIES.length * bar) / 2 + 4} text-anchor="end" font-size="12" fill="#1d2330">
              {r.displayName.length > 24 ? `${r.displayName.slice(0, 23)}…` : r.displayName}
            </text>
            {SERIES.map((s, j) => {
              const v = r.converted?.[s.key] ?? null;
              return (
                <g>
                  <rect x={label} y={y + j * bar} width={Math.max(v === null ? 0 : 1, scale(num(v)))} height={bar - 2} fill={s.color}>
                    <title>{`${r.displayName}: ${s.label.toLowerCase()} ${v === null ? "(no rate)" : fmtAmount(v, currency)}`}</title>
                  </rect>
                  <text x={label + scale(num(v)) + 4} y={y + j * bar + bar - 3} font-size="10" fill="#596170">
                    {v === null ? "no rate" : fmtAmount(v)}
                  </text>
                </g>
              );
            })}
          </g>
        );
      })}
      {SERIES.map((s, j) => (
        <g>
          <rect x={label + j * 110} y={height - 16} width="10" height="10" fill={s.color} />
          <text x={label + j * 110 + 14} y={height - 7} font-size="11" fill="#1d2330">
            {s.label}
          </text>
        </g>
      ))}
    </svg>
  );
}

function Totals({ a }: { a: Analytics }) {
  return (
    <table class="list analytics-totals">
      <caption>Totals per currency (closed workflowitems; open ones apart), exact</caption>
      <thead>
        <tr>
          <th>Currency</th>
          <th>Projected</th>
          <th>Assigned</th>
          <th>Disbursed</th>
          <th>Open assigned</th>
          <th>Open disbursed</th>
        </tr>
      </thead>
      <tbody>
        {a.total.byCurrency.map((c) => (
          <tr data-currency={c.currency}>
            <td>{c.currency}</td>
            <td>{fmtAmount(c.projected)}</td>
            <td>{fmtAmount(c.assigned)}</td>
            <td>{fmtAmount(c.disbursed)}</td>
            <td>{fmtAmount(c.openAssigned)}</td>
            <td>{fmtAmount(c.openDisbursed)}</td>
          </tr>
        ))}
        {a.total.converted ? (
          <tr class="converted">
            <td>{`All in ${a.total.converted.currency}`}</td>
            <td>{a.total.converted.projected === null ? "no rate" : fmtAmount(a.total.converted.projected)}</td>
            <td>{a.total.converted.assigned === null ? "no rate" : fmtAmount(a.total.converted.assigned)}</td>
            <td>{a.total.converted.disbursed === null ? "no rate" : fmtAmount(a.total.converted.disbursed)}</td>
            <td>{a.total.converted.openAssigned === null ? "no rate" : fmtAmount(a.total.converted.openAssigned)}</td>
            <td>{a.total.converted.openDisbursed === null ? "no rate" : fmtAmount(a.total.converted.openDisbursed)}</td>
          </tr>
        ) : null}
      </tbody>
    </table>
  );
}

export function AnalyticsPanel({ p }: { p: string }) {
  const [currency, setCurrency] = useState("EUR");
  const loaded = useLoad(() => client.project(p).analytics(/^[A-Z]{3}$/.test(currency) ? { currency } : {}), [p, currency]);
  const [exportError, setExportError] = useState<string | null>(null);
  const a = loaded.data;
  const download = async (format: "csv" | "xlsx") => {
    setExportError(null);
    try {
      const data = await client.project(p).analyticsExport(format, { currency });
      const type = format === "csv" ? "text/csv" : "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
      saveBlob(new Blob([data as BlobPart], { type }), `project-${p}-analytics.${format}`);
    } catch (e) {
      setExportError(e instanceof Error ? e.message : String(e));
    }
  };
  return (
    <div class="stack analytics">
      <div class="row">
        <label>
          Convert to
          <input aria-label="Convert to currency" value={currency} maxLength={3} size={4} onChange={(e) => setCurrency((e.target as HTMLInputElement).value.toUpperCase())} />
        </label>
        <button type="button" class="secondary" onClick={() => void download("csv")}>
          Export CSV
        </button>
        <button type="button" class="secondary" onClick={() => void download("xlsx")}>
          Export XLSX
        </button>
      </div>
      <ErrorBox error={loaded.error ?? exportError} />
      {a ? (
        <>
          {a.subprojects.length > 0 && a.currency ? <Chart rows={a.subprojects} currency={a.currency} /> : <p class="muted">No subproject to chart.</p>}
          {a.total.converted && a.total.converted.missingRates.length > 0 ? (
            <p class="notice conflict">{`No ${a.currency} rate for: ${a.total.converted.missingRates.map((m) => `${m.from} on ${m.date}`).join(", ")}. Those totals are left out of the conversion.`}</p>
          ) : null}
          <Totals a={a} />
          {a.hiddenSubprojects > 0 ? <p class="muted">{`${a.hiddenSubprojects} subproject(s) you may not view are counted in the totals, not charted.`}</p> : null}
          <p class="muted">{`Amounts are converted at the rate of their own date; projected budgets at ${a.date}'s. Converted figures are rounded to ${a.decimals} places.`}</p>
        </>
      ) : null}
    </div>
  );
}
