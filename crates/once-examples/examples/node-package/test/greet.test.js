import { test } from "node:test";
import assert from "node:assert/strict";

import { greeting } from "../src/greet.js";

test("greets by name", () => {
  assert.equal(greeting("Ada"), "Hello, Ada!");
});

test("a blank name greets the world", () => {
  assert.equal(greeting("  "), "Hello, world!");
  assert.equal(greeting(), "Hello, world!");
});
