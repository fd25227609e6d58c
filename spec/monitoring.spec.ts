import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import Database from 'better-sqlite3';
import { Subscription } from 'rxjs';
import { Cluster } from '../bench/cluster';
import { observeLeader } from '../src';
import { leaderMetrics } from '../src/surface/metrics';
import { eventually } from '../test-kit/eventually';
import { freePort } from '../test-kit/postgres-server';
import { metricsPort } from '../test-kit/worker-probes';
import { WorkerProcess } from '../test-kit/worker-process';

const monitoring = join(__dirname, '..', 'docs', 'monitoring');
const rulesFile = join(monitoring, 'leadership.rules.yml');

/** What promtool says, and whether it succeeded. */
function promtool(...args: string[]): { ok: boolean; output: string } {
  try {
    return { ok: true, output: execFileSync('promtool', args, { cwd: monitoring, encoding: 'utf8', stdio: 'pipe' }) };
  } catch (error) {
    const { stdout, stderr } = error as { stdout: string; stderr: string };
    return { ok: false, output: `${stdout}${stderr}` };
  }
}

// The alert rules the docs give, tested the Prometheus way: promtool's own checks and unit
// tests with synthetic series (Debian's prometheus package brings promtool; .ci/run installs it).
describe('the alert rules, docs/monitoring/leadership.rules.yml', () => {
  it('pass promtool check rules', () => {
    expect(promtool('check', 'rules', 'leadership.rules.yml')).toEqual({
      ok: true,
      output: expect.stringContaining('SUCCESS: 9 rules found'),
    });
  });

  it('pass their unit tests: every way a slot goes without a leader, and flapping by long-lived and by restarted workers', () => {
    expect(promtool('test', 'rules', 'leadership.rules.test.yml')).toEqual({ ok: true, output: expect.stringContaining('SUCCESS') });
  });

  it('are what docs/metrics-and-health.md shows, as they are', () => {
    const doc = readFileSync(join(__dirname, '..', 'docs', 'metrics-and-health.md'), 'utf8');
    const shown = /```yaml\n(# Alerts for observe-leadership[\s\S]*?)```/.exec(doc)?.[1];
    expect(shown).toBe(readFileSync(rulesFile, 'utf8'));
  });
});

/** A Prometheus server of this run's own, scraping the targets it is given, with the rules loaded. */
class PrometheusServer {
  private readonly folder = mkdtempSync(join(tmpdir(), 'observe-leadership-prometheus-'));
  private process: ChildProcess | undefined;
  private output = '';
  port = 0;

  /**
   * Starts it with the rules' `for:` shortened to 3 s: what the spec waits for is whether they
   * fire, and a takeover (a scrape or two without a leader's 1) must not make them fire.
   */
  async start(): Promise<void> {
    this.port = await freePort();
    writeFileSync(join(this.folder, 'rules.yml'), readFileSync(rulesFile, 'utf8').replace(/for: \d+m/g, 'for: 3s'));
    this.targets([]);
    writeFileSync(
      join(this.folder, 'prometheus.yml'),
      [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        'rule_files: [rules.yml]',
        'scrape_configs:',
        '  - job_name: workers',
        '    file_sd_configs: [{ files: [targets.json], refresh_interval: 1s }]',
      ].join('\n'),
    );
    this.process = spawn(
      'prometheus',
      [
        `--config.file=${join(this.folder, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(this.folder, 'data')}`,
        `--web.listen-address=127.0.0.1:${this.port}`,
      ],
      { cwd: this.folder, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.process.stdout!.on('data', (chunk) => (this.output += chunk));
    this.process.stderr!.on('data', (chunk) => (this.output += chunk));
    await eventually(
      'Prometheus ready',
      async () => {
        if (this.process?.exitCode !== null) throw new Error(`prometheus exited: ${this.output}`);
        return (await fetch(`http://127.0.0.1:${this.port}/-/ready`).catch(() => undefined))?.ok || undefined;
      },
      30_000,
    );
  }

  /** The endpoints to scrape (host:port), written where it looks for them. */
  targets(addresses: string[]): void {
    writeFileSync(join(this.folder, 'targets.json'), JSON.stringify([{ targets: addresses }]));
  }

  async query(expr: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> {
    const response = await fetch(`http://127.0.0.1:${this.port}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await response.json()) as {
      status: string;
      error?: string;
      data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> };
    };
    if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
    return body.data.result;
  }

  /** The alerts firing now, by name. */
  async firing(): Promise<string[]> {
    const response = await fetch(`http://127.0.0.1:${this.port}/api/v1/alerts`);
    const body = (await response.json()) as { data: { alerts: Array<{ labels: { alertname: string }; state: string }> } };
    return body.data.alerts.filter((alert) => alert.state === 'firing').map((alert) => alert.labels.alertname);
  }

  async stop(): Promise<void> {
    if (this.process && this.process.exitCode === null) {
      const exited = new Promise((resolve) => this.process!.once('exit', resolve));
      this.process.kill('SIGTERM');
      await exited;
    }
    rmSync(this.folder, { recursive: true, force: true });
  }
}

// A real Prometheus (Debian's package) scraping real worker processes on one SQLite file,
// each exporting leadershipMetrics() and a watch's leaderMetrics() through the OpenTelemetry
// SDK's Prometheus exporter, as docs/metrics-and-health.md wires them.
// With better-sqlite3's defaults (journal_mode delete) and as we advise (WAL).
describe.each(['delete', 'wal'] as const)(
  'a real Prometheus, scraping real workers (journal_mode %s), with the rules loaded',
  (journal) => {
    const folder = mkdtempSync(join(tmpdir(), 'observe-leadership-monitoring-'));
    const prometheus = new PrometheusServer();
    let cluster: Cluster;
    beforeAll(() => prometheus.start(), 60_000);
    afterAll(async () => {
      await cluster?.stop();
      await prometheus.stop();
      rmSync(folder, { recursive: true, force: true });
    });

    /** A dashboard's process: one long-lived observeLeader watch, exported as the workers are. */
    let watch: { subscription: Subscription; exporter: PrometheusExporter; provider: MeterProvider; address: string } | undefined;
    const startWatch = async () => {
      const port = await freePort();
      const exporter = new PrometheusExporter({ host: '127.0.0.1', port, preventServerStart: true });
      await exporter.startServer();
      const provider = new MeterProvider({ readers: [exporter] });
      const db = new Database(cluster.file as string, { readonly: true });
      const subscription = observeLeader(db, { instrument: leaderMetrics({ meter: provider.getMeter('dashboard') }) }).subscribe();
      subscription.add(() => db.close());
      watch = { subscription, exporter, provider, address: `127.0.0.1:${port}` };
    };
    const stopWatch = async () => {
      watch?.subscription.unsubscribe();
      await watch?.provider.shutdown(); // its exporter's server too: the target goes down
    };
    afterAll(stopWatch);

    /** Scrapes every worker started so far, dead ones too: a target that dies stays listed, as under service discovery. */
    const scrapeAll = async () =>
      prometheus.targets([
        ...(watch ? [watch.address] : []),
        ...(await Promise.all(cluster.processes.map(async (w) => `127.0.0.1:${await metricsPort(w)}`))),
      ]);
    /** Waits until Prometheus has scraped `worker`'s elections_total at `elections`. */
    const scraped = async (worker: WorkerProcess, elections: number) => {
      const series = `leadership_elections_total{instance="127.0.0.1:${await metricsPort(worker)}"} == ${elections}`;
      await eventually(`${series} scraped`, async () => (await prometheus.query(series)).length > 0 || undefined, 30_000);
    };
    /** Waits for `alert` to fire; if it never does, the failure shows what `shows` queried last. */
    const firing = async (alert: string, shows?: string) => {
      try {
        await eventually(`${alert} firing`, async () => (await prometheus.firing()).includes(alert) || undefined, 60_000);
      } catch (error) {
        const seen = shows === undefined ? [] : await prometheus.query(shows);
        throw new Error(`${(error as Error).message}; ${shows} was ${JSON.stringify(seen.map((s) => [s.metric, s.value[1]]))}`, {
          cause: error,
        });
      }
    };

    it('answers every query of the Grafana dashboard, and fires for flapping by restarted workers, for candidates that all stepped down, and for workers that all died', async () => {
      cluster = new Cluster('candidate', { renewEvery: 200, expiresAfter: 1_000, retryEvery: 200 }, folder, journal, {
        extra: { metrics: true },
      });
      await cluster.start(3);
      await startWatch();
      await scrapeAll();
      await eventually(
        'every worker scraped',
        async () => ((await prometheus.query('leadership_candidates == 1')).length === 3 ? true : undefined),
        30_000,
      );
      // Nothing fires once every worker was scraped (LeadershipAbsent does until the first scrape).
      await eventually('no alert firing', async () => ((await prometheus.firing()).length === 0 ? true : undefined), 30_000);

      // Flapping by new holders: five times, the leader is killed (its standbys take over at
      // once) and a worker is started again in its place, a new process with a new holder.
      // increase() counts a win only from a scrape at 0 to one at 1: each new worker is scraped
      // as a follower, and each leader as one, before the next kill.
      for (let restart = 0; restart < 5; restart++) {
        const leader = await cluster.leader();
        await scraped(leader, 1);
        leader.signal('SIGKILL');
        await leader.exited;
        await cluster.leader();
        const fresh = cluster.spawn();
        await scrapeAll();
        await scraped(fresh, 0);
      }
      await scraped(await cluster.leader(), 1);
      await firing('LeadershipFlapping', 'leadership_elections_total');
      await firing('LeadershipTermsAdvancing', 'leadership_term');
      await firing('LeadershipObservedFlapping', 'leadership_observed_elections_total');
      await firing('LeadershipWorkerDown'); // the killed ones, still listed

      // Every panel of the dashboard queries series that exist.
      const dashboard = JSON.parse(readFileSync(join(monitoring, 'grafana-dashboard.json'), 'utf8')) as {
        panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
      };
      const emptyPanels = async () => {
        const empty: string[] = [];
        for (const panel of dashboard.panels) {
          for (const { expr } of panel.targets) {
            const result = await prometheus.query(expr.replace(/\$__rate_interval/g, '1m'));
            if (result.length === 0) empty.push(`${panel.title}: ${expr}`);
          }
        }
        return empty;
      };
      // A rate needs two scrapes of a series: the newest leader's renewals may have had one so far.
      let empty = await emptyPanels();
      for (const end = Date.now() + 15_000; empty.length > 0 && Date.now() < end; empty = await emptyPanels()) {
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(empty).toEqual([]);
      expect(dashboard.panels.map((panel) => panel.title)).toEqual([
        'Leader per slot',
        'Term',
        'Elections',
        'Losses by reason',
        'Errors by code',
        'Renewal duration',
        'Time without a leader',
      ]);

      // Every candidate steps down; the processes live on, and say 0.
      const notFiring = (alert: string) =>
        eventually(`${alert} not firing`, async () => !(await prometheus.firing()).includes(alert) || undefined);
      await notFiring('LeadershipNoLeader');
      for (const worker of cluster.alive()) worker.send('unsubscribe');
      await firing('LeadershipNoLeader');
      await firing('LeadershipObservedNoLeader');

      // Every worker dies, and the dashboard's watch ends.
      await notFiring('LeadershipAbsent');
      for (const worker of cluster.alive()) worker.signal('SIGKILL');
      await Promise.all(cluster.processes.map((worker) => worker.exited));
      await firing('LeadershipAbsent');
      expect(await prometheus.firing()).not.toContain('LeadershipObserverAbsent'); // the workers' watches died, the dashboard's lives
      await stopWatch();
      await firing('LeadershipObserverAbsent');
    }, 240_000);
  },
);
