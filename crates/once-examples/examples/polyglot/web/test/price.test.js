import { test } from "node:test";
import assert from "node:assert/strict";

import { formatCents } from "../src/price.js";

test("formats whole and partial units", () => {
  assert.equal(formatCents(1999), "19.99");
  assert.equal(formatCents(5), "0.05");
});

test("refuses what is not a price", () => {
  assert.throws(() => formatCents(-1), RangeError);
  assert.throws(() => formatCents(1.5), RangeError);
});
