/** An error as one line for a person and a script alike: `CODE: message` (`ERROR` for one without a code). */
export function errorText(error: unknown): string {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return `${typeof code === 'string' ? code : 'ERROR'}: ${typeof message === 'string' ? message : String(error)}`;
}
