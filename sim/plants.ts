/**
 * Bugs to plant (`npm run simulate -- --plant NAME`): each a one-line change a careless
 * maintainer could make to the built library, switched in as its file loads, so that the
 * simulator shows it catches each. A plant whose line is no longer there (the code changed)
 * fails loudly rather than testing nothing: update its `find` then.
 */
import Module from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Plant {
  /** What the bug is, in the words of the change. */
  what: string;
  /** The built file, under build/. */
  file: string;
  /** Its one line, as built, and what the careless change makes of it. */
  find: string;
  replace: string;
}

export const plants: Record<string, Plant> = {
  'renew-any-tenure': {
    what: "a renewal that insists on the slot only, not on its tenure's holder and term",
    file: 'src/store/sqlite/sqlite-statements.js',
    find: 'SET expires_at = @expiresAt WHERE ${exports.ownTenure}`',
    replace: 'SET expires_at = @expiresAt WHERE slot = @slot`',
  },
  'release-any-tenure': {
    what: "a release that insists on the slot only, not on its tenure's holder and term",
    file: 'src/store/sqlite/sqlite-statements.js',
    find: 'release: `DELETE FROM worker_leadership WHERE ${exports.ownTenure}`',
    replace: 'release: `DELETE FROM worker_leadership WHERE slot = @slot`',
  },
  'renew-unchecked': {
    what: 'a renewal that does not look at whether it changed a row',
    file: 'src/store/sqlite/sqlite-prepared.js',
    find: 'if (renew().run({ ...lease, expiresAt: now.wall + expiresAfter }).changes !== 1)',
    replace: 'if (renew().run({ ...lease, expiresAt: now.wall + expiresAfter }).changes !== 1 && false)',
  },
  'take-by-wall-clock': {
    what: "a take at expiry judged by the wall clock, not by the holder's deadline on the monotonic clock",
    file: 'src/store/sqlite/sqlite-statements.js',
    find: 'WHEN deadline.clock = @clock THEN',
    replace: "WHEN deadline.clock = 'wall' THEN",
  },
  'take-keeps-term': {
    what: 'a takeover that keeps the term',
    file: 'src/store/sqlite/sqlite-schema.js',
    find: 'SET term = term + 1 WHERE slot = NEW.slot',
    replace: 'SET term = term WHERE slot = NEW.slot',
  },
  'stale-proof': {
    what: "a proof of a tenure's end accepted for any tenure of its holder",
    file: 'src/store/sqlite/sqlite-statements.js',
    find: 'OR (holder = @endedHolder AND (SELECT term FROM worker_leadership_term WHERE slot = @slot) = @endedTerm)',
    replace: 'OR (holder = @endedHolder)',
  },
  'renewal-belief-from-answer': {
    what: "a leader's belief counted from the renewal's answer rather than from its send",
    file: 'src/campaign/leader-steps.js',
    find: 'expiresAt: sentAt + expiresAfter,',
    replace: 'expiresAt: Math.floor(campaign.now()) + expiresAfter,',
  },
  'election-belief-from-answer': {
    what: "a new leader's belief counted from the acquisition's answer rather than from its send",
    file: 'src/campaign/follower-steps.js',
    find: 'const expiresAt = sentAt + campaign.timing.expiresAfter;',
    replace: 'const expiresAt = campaign.now() + campaign.timing.expiresAfter;',
  },
  'lock-delay-skipped': {
    what: 'a take of an expired lease announced at once, its lock-delay skipped',
    file: 'src/campaign/campaign.js',
    find: 'const leading = replaced !== undefined && lockDelay > 0 ?',
    replace: 'const leading = replaced !== undefined && lockDelay < 0 ?',
  },
  'standby-rejection-unhandled': {
    what: 'a standby claim answered later (a promise) whose failure nobody catches: an unhandled rejection ends the process',
    file: 'src/campaign/aids/standby.js',
    find: 'held.then(settle, () => undefined);',
    replace: 'held.then(settle);',
  },
  'fenced-ignores-expiry': {
    what: "a fenced write that checks the tenure's holder and term, not that its lease still stands",
    file: 'src/store/sqlite/sqlite-prepared.js',
    find: '() => (0, lease_check_1.stands)(row.expiresIn)',
    replace: '() => true',
  },
  'preempt-unbounded': {
    what: 'a leader that gives way to a higher priority as soon as one declares itself, without leading a lease first',
    file: 'src/campaign/aids/priority.js',
    find: 'campaign.now() - since < expiresAfter)',
    replace: 'campaign.now() - since < 0)',
  },
  'resubscribe-at-once': {
    what: 'a new subscription of a holder that starts before the last one of that holder settled',
    file: 'src/surface/candidate-registry.js',
    find: 'if (current === undefined)',
    replace: 'if (true)',
  },
};

/**
 * Switches `name` in: from now on, its file loads with its line changed. Call it before
 * anything loads the library. Returns a check that the planted file did load.
 */
export function plant(name: string): () => boolean {
  const chosen = plants[name];
  if (chosen === undefined) throw new Error(`unknown plant ${name} (plants: ${Object.keys(plants).join(', ')})`);
  const target = join(__dirname, '..', ...chosen.file.split('/'));
  if (require.cache[target] !== undefined) throw new Error(`plant ${name}: ${chosen.file} was loaded before it could be planted`);
  const loaders = (Module as unknown as { _extensions: Record<string, (module: NodeJS.Module, file: string) => void> })._extensions;
  const load = loaders['.js'];
  let planted = false;
  loaders['.js'] = (module, file) => {
    if (file !== target) return load(module, file);
    const source = readFileSync(file, 'utf8');
    const found = source.split(chosen.find).length - 1;
    if (found !== 1) {
      throw new Error(
        `plant ${name}: ${chosen.file} has ${found} of ${JSON.stringify(chosen.find)}, not one: the code changed; update sim/plants.ts`,
      );
    }
    (module as unknown as { _compile(source: string, file: string): void })._compile(source.replace(chosen.find, chosen.replace), file);
    planted = true;
  };
  return () => planted;
}
