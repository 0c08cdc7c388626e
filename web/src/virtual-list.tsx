/**
 * A list that renders only the rows in view (plus a few around), so 10,000 rows cost as much as 30:
 * fixed row height, a spacer of the full height, rows absolutely placed at their offsets.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";

export function VirtualList<T>(props: {
  items: readonly T[];
  rowHeight: number;
  height: number;
  keyOf: (item: T) => string;
  row: (item: T, index: number) => ComponentChildren;
  label: string;
  scrollTo?: number | null;
}) {
  const { items, rowHeight, height } = props;
  const [top, setTop] = useState(0);
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el || props.scrollTo == null) return;
    const y = props.scrollTo * rowHeight;
    if (y < el.scrollTop || y + rowHeight > el.scrollTop + height) el.scrollTop = Math.max(0, y - height / 2);
  }, [props.scrollTo]);
  const overscan = 6;
  const first = Math.max(0, Math.floor(top / rowHeight) - overscan);
  const last = Math.min(items.length, Math.ceil((top + height) / rowHeight) + overscan);
  const rows: ComponentChildren[] = [];
  for (let i = first; i < last; i++) {
    const item = items[i]!;
    rows.push(
      <li key={props.keyOf(item)} class="vrow" aria-posinset={i + 1} aria-setsize={items.length} style={{ top: `${i * rowHeight}px`, height: `${rowHeight}px` }}>
        {props.row(item, i)}
      </li>,
    );
  }
  return (
    <div ref={box} class="vlist" style={{ height: `${Math.min(height, Math.max(items.length, 1) * rowHeight + 2)}px` }} onScroll={(e) => setTop(e.currentTarget.scrollTop)}>
      <ul class="vspacer" aria-label={props.label} style={{ height: `${items.length * rowHeight}px` }}>
        {rows}
      </ul>
    </div>
  );
}
