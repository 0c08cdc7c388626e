/**
 * The PostgreSQL backend's stored format: the tables and functions of a schema (see store.ts's header
 * for what each table holds). The table layout and the commit function's signature are part of the
 * stored format.
 */

/**
 * The commit function's exact signature: it names the format, so a schema whose function has another
 * signature (an older format) is brought up to date by running schemaSql again.
 */
export const commitSignature = (schema: string): string => `"${schema}".flowstore_commit(bytea, bytea, bytea[], int8[], text, bytea[], bytea, int4[], bytea, int4)`;

/** The tables and functions of a schema; idempotent, run under an advisory lock by the first call. */
export function schemaSql(schema: string): string {
  const s = `"${schema}"`;
  return `
BEGIN;
SELECT pg_advisory_xact_lock(hashtext('flowstore schema ${schema}'));
CREATE SCHEMA IF NOT EXISTS ${s};
CREATE TABLE IF NOT EXISTS ${s}.flowstore_records (
  partition bytea NOT NULL, key bytea NOT NULL, version int8 NOT NULL, value bytea NOT NULL,
  PRIMARY KEY (partition, key));
CREATE TABLE IF NOT EXISTS ${s}.flowstore_partitions (id bytea PRIMARY KEY, seq int8 NOT NULL);
CREATE TABLE IF NOT EXISTS ${s}.flowstore_partition_index (kind bytea NOT NULL, id bytea NOT NULL, PRIMARY KEY (kind, id));
-- ops: one letter per write, p(ut) d(elete) r(ange delete [keys[i], its end)). The writes' second
-- operands (a put's value, a range's end; empty for a delete) travel as one binary blob cut by _lens
-- (a bytea[] parameter would go as hex text, twice the size of a value), except the largest, which is a
-- parameter of its own (_big, the operand of write _big_at): a 1 MiB archive chunk is not copied.
-- Returns (1, new sequence, null), or (0, index of the failed check, the key's version or null).
CREATE OR REPLACE FUNCTION ${s}.flowstore_commit(
  _p bytea, _kind bytea, _check_keys bytea[], _check_versions int8[], _ops text, _keys bytea[], _blob bytea,
  _lens int4[], _big bytea, _big_at int4, OUT ok int4, OUT info int8, OUT have int8)
LANGUAGE plpgsql AS $f$
DECLARE
  s int8;
  v int8;
  put boolean := false;
  off int4 := 1;
  val bytea;
BEGIN
  SELECT seq INTO s FROM ${s}.flowstore_partitions WHERE id = _p FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO ${s}.flowstore_partitions (id, seq) VALUES (_p, 0) ON CONFLICT (id) DO NOTHING;
    SELECT seq INTO s FROM ${s}.flowstore_partitions WHERE id = _p FOR UPDATE;
  END IF;
  FOR i IN 1..coalesce(array_length(_check_keys, 1), 0) LOOP
    SELECT version INTO v FROM ${s}.flowstore_records WHERE partition = _p AND key = _check_keys[i];
    IF v IS DISTINCT FROM _check_versions[i] THEN
      ok := 0; info := i; have := v;
      RETURN;
    END IF;
  END LOOP;
  s := s + 1;
  UPDATE ${s}.flowstore_partitions SET seq = s WHERE id = _p;
  FOR i IN 1..length(_ops) LOOP
    IF i = _big_at THEN
      val := _big;
    ELSE
      val := substring(_blob FROM off FOR _lens[i]);
      off := off + _lens[i];
    END IF;
    CASE substr(_ops, i, 1)
      WHEN 'p' THEN
        INSERT INTO ${s}.flowstore_records (partition, key, version, value) VALUES (_p, _keys[i], s, val)
          ON CONFLICT (partition, key) DO UPDATE SET version = excluded.version, value = excluded.value;
        put := true;
      WHEN 'd' THEN
        DELETE FROM ${s}.flowstore_records WHERE partition = _p AND key = _keys[i];
      ELSE
        DELETE FROM ${s}.flowstore_records WHERE partition = _p AND key >= _keys[i] AND key < val;
    END CASE;
  END LOOP;
  IF put THEN
    INSERT INTO ${s}.flowstore_partition_index (kind, id) VALUES (_kind, _p) ON CONFLICT DO NOTHING;
  END IF;
  ok := 1; info := s; have := NULL;
END
$f$;
CREATE OR REPLACE FUNCTION ${s}.flowstore_drop(_p bytea, _kind bytea) RETURNS void
LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM 1 FROM ${s}.flowstore_partitions WHERE id = _p FOR UPDATE;
  DELETE FROM ${s}.flowstore_partition_index WHERE kind = _kind AND id = _p;
  DELETE FROM ${s}.flowstore_records WHERE partition = _p;
END
$f$;
COMMIT;`;
}
