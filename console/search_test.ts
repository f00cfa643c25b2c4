import assert from "node:assert/strict";
import { HistorySearch } from "./search.ts";

const HISTORY = ["log -n 5", 'notes.add {"text": "milk"}', "ps", "notes.list"]; // newest first

Deno.test("Ctrl-R finds the newest entry holding the query, narrowing as keys come", () => {
  const s = new HistorySearch(HISTORY);
  assert.equal(s.match, "");
  assert.equal(s.prompt, "(reverse-i-search)`': ");
  s.type("n");
  assert.equal(s.match, "log -n 5");
  s.type("o");
  assert.equal(s.match, 'notes.add {"text": "milk"}');
  assert.equal(s.offset, 0);
  assert.equal(s.prompt, "(reverse-i-search)`no': ");
});

Deno.test("Ctrl-R again goes to older matches, and stays on the last one, failing", () => {
  const s = new HistorySearch(HISTORY);
  s.type("notes");
  assert.equal(s.match, 'notes.add {"text": "milk"}');
  s.older();
  assert.equal(s.match, "notes.list");
  s.older();
  assert.equal(s.match, "notes.list");
  assert.match(s.prompt, /^\(failed reverse-i-search\)/);
});

Deno.test("a query nothing holds fails; backspace searches again from the newest", () => {
  const s = new HistorySearch(HISTORY);
  s.type("psx");
  assert.equal(s.match, "");
  assert.match(s.prompt, /failed/);
  s.backspace();
  assert.equal(s.match, "ps");
  assert.equal(s.query, "ps");
  assert.doesNotMatch(s.prompt, /failed/);
});
