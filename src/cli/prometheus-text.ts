import type { SlotStatus } from './slot-status';

/** A label value as the Prometheus text format wants it: backslash, quote and newline escaped. */
function labelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/**
 * A slot's state in the Prometheus text exposition format, under the names and labels that
 * `leaderMetrics()` of `observe-leadership/metrics` gives through OpenTelemetry, so that one
 * dashboard reads both: whether the slot has a leader, its term, and the seconds its lease
 * has left (negative once it ran out). A lease whose standing one look cannot tell (see
 * `SlotStatus.live`) counts as a leader: its holder may well lead.
 */
export function prometheusText({ slot, holder, term, expiresIn, live }: SlotStatus): string {
  const slotLabel = `leadership_slot="${slot}"`;
  const leads = live !== false && holder !== null;
  const labels = leads ? `{${slotLabel},leadership_holder="${labelValue(holder)}"}` : `{${slotLabel}}`;
  const lines = [
    '# HELP leadership_observed_leader Whether the slot has a leader (1) or not (0), as watched',
    '# TYPE leadership_observed_leader gauge',
    `leadership_observed_leader${labels} ${leads ? 1 : 0}`,
  ];
  if (leads && term !== null) {
    lines.push(
      "# HELP leadership_observed_term The leader's term, as watched",
      '# TYPE leadership_observed_term gauge',
      `leadership_observed_term${labels} ${term}`,
    );
  }
  if (expiresIn !== null) {
    lines.push(
      "# HELP leadership_observed_lease_expires_in_seconds Seconds until the slot's lease runs out unless renewed (negative once it has)",
      '# TYPE leadership_observed_lease_expires_in_seconds gauge',
      `leadership_observed_lease_expires_in_seconds{${slotLabel}} ${expiresIn / 1000}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
