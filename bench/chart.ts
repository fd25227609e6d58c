import { Comparison } from './cluster';

const width = 760;
const left = 250;
const right = 20;
const laneHeight = 30;
const top = 64;

/**
 * A strip chart of latency samples on a logarithmic axis: one pair of lanes (ours, the
 * original where it ran) per scenario, each sample a dot, p50 and p99 as ticks. Plain SVG, no fonts
 * beyond the generic ones, so that it renders the same everywhere.
 */
export function renderChart(comparisons: Comparison[]): string {
  const samples = comparisons.flatMap((c) => [...c.ours.samples, ...(c.original?.samples ?? [])]).filter((v) => v > 0);
  const low = 10 ** Math.floor(Math.log10(Math.max(0.1, Math.min(...samples))));
  const high = 10 ** Math.ceil(Math.log10(Math.max(...samples)));
  const x = (ms: number) =>
    left + ((Math.log10(Math.max(ms, low)) - Math.log10(low)) / (Math.log10(high) - Math.log10(low))) * (width - left - right);
  const height = top + comparisons.length * laneHeight * 2.5 + 30;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="8" y="18" font-weight="bold">Time without a leader, ms (log scale)</text>`,
    `<text x="8" y="38"><tspan fill="#1f77b4">● this library</tspan>    <tspan fill="#ff7f0e">● the original worker's statements, polling</tspan></text>`,
  ];
  for (let decade = low; decade <= high; decade *= 10) {
    parts.push(`<line x1="${x(decade)}" x2="${x(decade)}" y1="${top - 8}" y2="${height - 30}" stroke="#ddd"/>`);
    parts.push(`<text x="${x(decade)}" y="${height - 14}" text-anchor="middle">${decade >= 1 ? decade : decade.toFixed(1)}</text>`);
  }
  comparisons.forEach((comparison, index) => {
    const y = top + index * laneHeight * 2.5;
    parts.push(`<text x="8" y="${y + laneHeight}">${escape(comparison.scenario)}</text>`);
    [
      ['ours', comparison.ours, '#1f77b4'],
      ['original', comparison.original, '#ff7f0e'],
    ].forEach(([, series, color], lane) => {
      if (series === undefined) return; // ours alone in this scenario
      const { samples: points, p50, p99 } = series as Comparison['ours'];
      const cy = y + 8 + lane * laneHeight;
      for (const value of points) parts.push(`<circle cx="${x(value).toFixed(1)}" cy="${cy}" r="3" fill="${color}" fill-opacity="0.45"/>`);
      // Labels above the upper lane and below the lower one; p50 to the left of its tick and
      // p99 to the right, so that close values stay readable.
      const dy = lane === 0 ? -10 : 18;
      for (const [label, value, anchor, dx] of [
        ['p50', p50, 'end', -3],
        ['p99', p99, 'start', 3],
      ] as const) {
        parts.push(`<line x1="${x(value)}" x2="${x(value)}" y1="${cy - 8}" y2="${cy + 8}" stroke="${color}" stroke-width="2"/>`);
        parts.push(
          `<text x="${x(value) + dx}" y="${cy + dy}" font-size="10" text-anchor="${anchor}" fill="${color}">${label} ${value.toFixed(value < 10 ? 1 : 0)}</text>`,
        );
      }
    });
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
}
