// How to greet someone.

/** A greeting for `name`; a blank name greets the world. */
export function greeting(name = "") {
  const trimmed = String(name).trim();
  return trimmed === "" ? "Hello, world!" : `Hello, ${trimmed}!`;
}
