import { ulid } from 'ulid';
import { everybody, type HandoffMessage } from './lease-store';

const isSlot = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
const isHolder = (value: unknown): value is string => typeof value === 'string' && value.length > 0;

/**
 * A message about a handoff as sent (JSON), or `undefined` for anything else: whoever may write
 * the message's file or notify on the channel may send nonsense, which is ignored (a request
 * only moves a tenure its leader still holds, to a successor that then takes it itself).
 */
export function handoffMessageOf(text: string): HandoffMessage | undefined {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof message !== 'object' || message === null) return undefined;
  const { kind, lease, slot, to, term, replyTo, holder, heard } = message as Record<string, unknown>;
  if (kind === 'handed')
    return isSlot(slot) && isHolder(to) && Number.isSafeInteger(term) ? { kind, slot, to, term: term as number } : undefined;
  if (kind === 'roll-call') {
    if (!isSlot(slot) || !(to === everybody || isHolder(to)) || !isHolder(replyTo)) return undefined;
    return Array.isArray(heard) && heard.every(isHolder) ? { kind, slot, to, replyTo, heard } : { kind, slot, to, replyTo };
  }
  if (kind === 'present') return isSlot(slot) && isHolder(to) && isHolder(holder) ? { kind, slot, to, holder } : undefined;
  if (kind !== 'asked' || typeof lease !== 'object' || lease === null) return undefined;
  const asked = lease as Record<string, unknown>;
  if (!isSlot(asked.slot) || !isHolder(asked.holder) || !Number.isSafeInteger(asked.term)) return undefined;
  if (to !== undefined && !isHolder(to)) return undefined;
  const of = { slot: asked.slot, holder: asked.holder, term: asked.term as number };
  return to === undefined ? { kind, lease: of } : { kind, lease: of, to };
}

/** Whom a message is for: the leader asked, the successor handed the slot, the candidates called, the caller; {@link everybody} for all. */
export function addresseeOf(message: HandoffMessage): string {
  return message.kind === 'asked' ? message.lease.holder : message.to;
}

/** A fresh address for a roll call's answers (see `HandoffMessage`): heard as a holder's messages are. */
export function rollCallAddress(): string {
  return `${rollCallPrefix}${ulid()}`;
}

/** Whether `holder` is a roll call's address: a store may carry its answers another way than a holder's messages. */
export function isRollCallAddress(holder: string): boolean {
  return holder.startsWith(rollCallPrefix);
}

const rollCallPrefix = 'roll-call-';
