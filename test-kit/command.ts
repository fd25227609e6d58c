/**
 * Runs a tool's `main` as a command: its exit code is the one `main` resolves to, and 2 (the
 * tools' code for what they could not run) with the error printed if it fails.
 */
export function runCommand(main: () => Promise<number>): void {
  main().then(
    (code) => (process.exitCode = code),
    (error) => {
      console.error(error);
      process.exitCode = 2;
    },
  );
}
