/** What `--help` says of each command: its usage line, what it does, its options, an example. */
interface CommandHelp {
  readonly usage: string;
  /** One line, for the overview. */
  readonly summary: string;
  readonly details: string;
  readonly example: string;
}

const database = `  <database>            the path of a SQLite file, or a postgres:// URL
  --schema S, --table T on PostgreSQL, the lease table when it is not public.worker_leadership`;
const slot = '  --slot N              which election (default 0)';

export const commandHelp: Readonly<Record<string, CommandHelp>> = {
  status: {
    usage: 'status <database> [--slot N] [--json | --prometheus]',
    summary: 'who holds the slot, for which term, until when, and who stands by',
    details: `${database}
${slot}
  --json                one JSON object, for scripts
  --prometheus          Prometheus text format, for a textfile collector`,
    example: 'observe-leadership status jobs.db --json',
  },
  watch: {
    usage: 'watch <database> [--slot N] [--poll-every MS] [--prometheus]',
    summary: 'a line each time the slot changes hands, is renewed, or runs out, until Ctrl-C',
    details: `${database}
${slot}
  --poll-every MS       how often to look where no change is heard of (default 1000)
  --prometheus          the state in Prometheus text format at each change`,
    example: 'observe-leadership watch jobs.db',
  },
  handoff: {
    usage: 'handoff <database> [--slot N] [--to HOLDER] [--within MS]',
    summary: 'ask the leader to hand its tenure to a standing candidate, and say who leads next',
    details: `${database}
${slot}
  --to HOLDER           the standing candidate to hand over to (status lists them);
                        without it, to whichever candidate takes the slot first
  --within MS           how long to wait for the next tenure (default 10000)
  Fails (exit 1), changing nothing, when nobody leads, when HOLDER does not stand
  by for the slot, or when the leader does not answer within MS.`,
    example: 'observe-leadership handoff jobs.db --to worker-4242',
  },
  init: {
    usage: 'init <file> [--wal]',
    summary: 'create a SQLite file with the lease tables (the other commands never create one)',
    details: `  <file>                the SQLite file to create, or to complete with the lease tables
  --wal                 set the journal mode we advise (WAL), which the file keeps`,
    example: 'observe-leadership init jobs.db --wal',
  },
  run: {
    usage: 'run <database> [--slot N] [--holder H] [--renew-every MS] [--expires-after MS] [--retry-every MS] [--grace MS] -- <command...>',
    summary: 'campaign, and run the command only while leading',
    details: `${database}
${slot}
  --holder H            who this candidate is (default: a new ULID, printed)
  --renew-every MS      how often the leader renews its lease (default 30000)
  --expires-after MS    how long a lease lasts (default 60000)
  --retry-every MS      how often a follower tries again (default 1000)
  --grace MS            how long the command has to stop after SIGTERM (default 10000)
  The command's environment has OBSERVE_LEADERSHIP_SLOT, OBSERVE_LEADERSHIP_HOLDER and
  OBSERVE_LEADERSHIP_TERM; run exits with its code.`,
    example: 'observe-leadership run jobs.db --holder "cron-$(hostname)" -- ./nightly.sh',
  },
};

const exitCodes = `exit codes: 0 done, 1 failed, 2 bad arguments, 3 no such database, 4 no lease table,
5 not a SQLite database; run exits with its command's code`;

/** `observe-leadership --help`: every command in a line or two. */
export function overview(): string {
  const commands = Object.values(commandHelp).map(({ usage, summary }) => `  ${usage}\n      ${summary}`);
  return `usage: observe-leadership <command> <database> [options]

${commands.join('\n')}

  <database> is the path of a SQLite file, or a postgres:// URL.
  observe-leadership <command> --help tells more of each; --version its version.

${exitCodes}`;
}

/** `observe-leadership <name> --help`. */
export function helpOf(name: string): string {
  const { usage, summary, details, example } = commandHelp[name];
  return `usage: observe-leadership ${usage}

${summary[0].toUpperCase()}${summary.slice(1)}.

${details}

example:
  ${example}

${exitCodes}`;
}
