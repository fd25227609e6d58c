export default function stopServer(): void {
  (globalThis as { stopPostgresServer?: () => void }).stopPostgresServer?.();
}
