/** A value that components can follow: `useValue(x)` re-renders when `x.value` is set. */
import { useEffect, useState } from "preact/hooks";

export class Observable<T> {
  #value: T;
  readonly #listeners = new Set<(v: T) => void>();

  constructor(value: T) {
    this.#value = value;
  }

  get value(): T {
    return this.#value;
  }

  set value(v: T) {
    this.#value = v;
    for (const l of [...this.#listeners]) l(v);
  }

  subscribe(listener: (v: T) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

export function useValue<T>(o: Observable<T>): T {
  const [, setTick] = useState(0);
  const value = o.value;
  useEffect(() => {
    const off = o.subscribe(() => setTick((t) => t + 1));
    // A change between this render and the subscription (effects run after paint) is not lost.
    if (o.value !== value) setTick((t) => t + 1);
    return off;
  }, [o]);
  return value;
}
