/** An error as one line for a person and a script alike: its code (a `LeadershipError`'s), then its message. */
export function errorText(error: unknown): string {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return `${typeof code === 'string' ? `${code}: ` : ''}${typeof message === 'string' ? message : String(error)}`;
}
