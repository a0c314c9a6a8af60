// Formats prices kept in cents, as the Rust core computes them.

/** `1999` → `"19.99"`. */
export function formatCents(cents) {
  if (!Number.isInteger(cents) || cents < 0) {
    throw new RangeError(`not a price in cents: ${cents}`);
  }
  const units = Math.floor(cents / 100);
  const rest = String(cents % 100).padStart(2, "0");
  return `${units}.${rest}`;
}
