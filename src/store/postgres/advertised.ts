/*
 * What a tenure's holder advertises (the `advertise` option) is kept in the row's
 * `advertised` column, with the holder that wrote it: `{"holder": ..., "value": ...}`. It is
 * read back only while that holder holds the row.
 */

/** The column `advertised` of `row`'s select: its value while the holder that wrote it holds the row. */
export const advertisedOf = (row: string) =>
  `CASE WHEN (${row}.advertised::jsonb ->> 'holder') = ${row}.holder THEN ${row}.advertised::jsonb ->> 'value' END AS advertised`;

/** What a write stores in `advertised`: `$value` (a text parameter, NULL for nothing) for holder `$holder`. */
export const advertisedWritten = (holder: string, value: string) =>
  `CASE WHEN ${value}::text IS NOT NULL THEN json_build_object('holder', ${holder}::text, 'value', ${value}::text)::text END`;
