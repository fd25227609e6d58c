import type { HandoffWord } from './lease-store';

const isSlot = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
const isHolder = (value: unknown): value is string => typeof value === 'string' && value.length > 0;

/**
 * A word about a handoff as sent (JSON), or `undefined` for anything else: whoever may write
 * the word's file or notify on the channel may send nonsense, which is ignored (a request
 * only moves a tenure its leader still holds, to a successor that then takes it itself).
 */
export function handoffWordOf(text: string): HandoffWord | undefined {
  let word: unknown;
  try {
    word = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof word !== 'object' || word === null) return undefined;
  const { kind, lease, slot, to, term } = word as Record<string, unknown>;
  if (kind === 'handed')
    return isSlot(slot) && isHolder(to) && Number.isSafeInteger(term) ? { kind, slot, to, term: term as number } : undefined;
  if (kind !== 'asked' || typeof lease !== 'object' || lease === null) return undefined;
  const asked = lease as Record<string, unknown>;
  if (!isSlot(asked.slot) || !isHolder(asked.holder) || !Number.isSafeInteger(asked.term)) return undefined;
  if (to !== undefined && !isHolder(to)) return undefined;
  const of = { slot: asked.slot, holder: asked.holder, term: asked.term as number };
  return to === undefined ? { kind, lease: of } : { kind, lease: of, to };
}

/** Whom a word is for: the leader asked, or the successor handed the slot. */
export function addresseeOf(word: HandoffWord): string {
  return word.kind === 'asked' ? word.lease.holder : word.to;
}
