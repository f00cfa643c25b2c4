import assert from "node:assert/strict";
import { makeStyle } from "./format.ts";
import { formatActivated, formatMethods } from "./methods.ts";

// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[/;
// deno-lint-ignore no-control-regex
const SGR = /\x1b\[[0-9;]*m/g;

const ADDED = {
  type: "object",
  properties: { count: { type: "integer", format: "uint64", minimum: 0 } },
  required: ["count"],
};

/** notes, version 1, of tests/plugins/crates/iface. */
const NOTES = {
  openrpc: "1.2.6",
  info: { title: "notes", version: "1" },
  methods: [
    {
      name: "add",
      summary: "Add a note.",
      paramStructure: "by-name",
      params: [{ name: "text", required: true, schema: { type: "string", examples: ["milk"] } }],
      result: { name: "Added", schema: { $ref: "#/components/schemas/Added" } },
    },
    {
      name: "list",
      summary: "List the notes.",
      params: [],
      result: { name: "notes", schema: { type: "array", items: { type: "string" } } },
    },
  ],
  components: { schemas: { Added: ADDED } },
};

/** A server as the SDK describes one: endpoints, grace, imports, shared schemas. */
const WWW = {
  openrpc: "1.2.6",
  info: { title: "www", version: "0.2.0", description: "A small web server." },
  methods: [
    {
      name: "start",
      summary: "Starts the server.",
      description: "Serves /state/www/public.\n\nBinds 127.0.0.1.",
      params: [
        {
          name: "port",
          required: false,
          schema: { type: ["integer", "null"], format: "uint16" },
          description: "The port; a free one when left out.",
        },
        { name: "mode", required: true, schema: { $ref: "#/components/schemas/Mode" } },
        {
          name: "routes",
          required: false,
          schema: { type: "array", items: { $ref: "#/components/schemas/Route" } },
        },
      ],
      result: {
        name: "result",
        schema: { anyOf: [{ $ref: "#/components/schemas/Started" }, { type: "null" }] },
      },
      "x-sausage-params": { $ref: "#/components/schemas/StartParams" },
    },
    { name: "old", params: [], deprecated: true },
  ],
  components: {
    schemas: {
      Mode: { type: "string", enum: ["static", "proxy"] },
      Route: {
        type: "object",
        properties: { path: { type: "string" }, to: { $ref: "#/components/schemas/Target" } },
        required: ["path"],
      },
      Target: { type: ["string", "null"] },
      Started: {
        type: "object",
        properties: { port: { type: "integer" } },
        required: ["port"],
      },
      Stats: {
        type: "object",
        properties: { hits: { type: "integer" } },
        required: ["hits"],
      },
    },
  },
  "x-sausage-endpoints": {
    control: {
      description: "Control of a running server.",
      methods: [
        {
          name: "stats",
          params: [],
          result: { name: "result", schema: { $ref: "#/components/schemas/Stats" } },
        },
      ],
    },
  },
  "x-sausage-grace": 5,
  "x-sausage-imports": {
    secrets: {
      methods: [{ name: "get" }, { name: "put" }],
      "x-sausage-endpoints": { vault: { methods: [{ name: "read" }] } },
    },
    notes: { methods: [{ name: "add" }] },
  },
};

Deno.test("methods shows each method with params, result type and summary", () => {
  assert.equal(
    formatMethods("notes", NOTES),
    [
      "  notes, version 1",
      "  methods:",
      "    add(text: string) -> Added { count: integer }",
      "      Add a note.",
      "    list() -> string[]",
      "      List the notes.",
    ].join("\n"),
  );
});

Deno.test("methods shows endpoints after the main interface, the grace period, imports and types", () => {
  assert.equal(
    formatMethods("www", WWW, { importStatus: { secrets: "ok", notes: "broken" } }),
    [
      "  www, version 0.2.0",
      "    A small web server.",
      "  methods:",
      "    start(port?: integer | null, mode: Mode, routes?: Route[]) -> Started | null",
      "      Starts the server.",
      "      Serves /state/www/public.",
      "",
      "      Binds 127.0.0.1.",
      "      port — The port; a free one when left out.",
      "    old() (deprecated)",
      "  endpoint control: Control of a running server.",
      "    stats() -> Stats { hits: integer }",
      "  grace period: 5 s (old processes get this long to finish after an upgrade)",
      "  imports:",
      "    secrets: get, put (ok)",
      "    secrets.vault: read",
      "    notes: add (broken)",
      "  types:",
      '    Mode = "static" | "proxy"',
      "    Route { path: string, to?: Target }",
      "    Started { port: integer }",
      "    Target = string | null",
    ].join("\n"),
  );
});

Deno.test("a long signature shows one param a line", () => {
  const long = "x".repeat(40);
  const doc = {
    openrpc: "1.2.6",
    methods: [{
      name: "put",
      params: [
        { name: `a${long}`, required: true, schema: { type: "string" } },
        { name: `b${long}`, schema: { type: "integer" } },
      ],
      result: { name: "r", schema: { type: "boolean" } },
    }],
  };
  assert.equal(
    formatMethods("kv", doc),
    [
      "  kv",
      "  methods:",
      "    put(",
      `      a${long}: string,`,
      `      b${long}?: integer,`,
      "    ) -> boolean",
    ].join("\n"),
  );
});

Deno.test("params come from x-sausage-params when the list is empty; $refs to descriptors are followed", () => {
  const doc = {
    openrpc: "1.2.6",
    info: { title: "other", version: "3" },
    methods: [
      {
        name: "a",
        params: [],
        "x-sausage-params": { $ref: "#/components/schemas/AParams" },
      },
      { $ref: "#/components/methods/b" },
      7,
    ],
    components: {
      schemas: {
        AParams: {
          type: "object",
          properties: { id: { type: "string", description: "Which one." } },
          required: ["id"],
        },
      },
      methods: { b: { name: "b", params: [{ $ref: "#/components/contentDescriptors/N" }] } },
      contentDescriptors: { N: { name: "n", required: true, schema: { type: "number" } } },
    },
  };
  assert.equal(
    formatMethods("mine", doc),
    [
      "  mine (other, version 3)",
      "  methods:",
      "    a(id: string)",
      "      id — Which one.",
      "    b(n: number)",
      "    (an entry that is not a method: 7)",
    ].join("\n"),
  );
});

Deno.test("a document not known yet, a failed discovery and a document without methods are said so", () => {
  assert.match(
    formatMethods("notes", null),
    /does not know the rpc\.discover document of notes yet/,
  );
  const failed = formatMethods("notes", { error: "no rpc.discover answer within 10 s" });
  assert.match(failed, /^ {2}the discovery of notes failed: no rpc\.discover answer within 10 s\n/);
  assert.match(failed, /its methods are unknown/);
  assert.match(formatMethods("notes", { openrpc: "1.2.6" }), /has no list of methods/);
  assert.match(
    formatMethods("notes", { openrpc: "1.2.6", methods: [] }),
    /methods:\n {4}no methods/,
  );
});

Deno.test("colours mark names, headings and import results", () => {
  const color = makeStyle(true);
  const text = formatMethods("www", WWW, { style: color, importStatus: { secrets: "ok" } });
  assert.match(text, ANSI);
  assert.equal(
    text.replace(SGR, ""),
    formatMethods("www", WWW, { importStatus: { secrets: "ok" } }),
  );
});

Deno.test("an activation's answer names each plugin, its version and methods", () => {
  assert.equal(
    formatActivated([{ plugin: "notes", document: NOTES, changed: true }]),
    [
      "  activated notes (version 1, methods add, list)",
      "  new calls get the new version; running processes of the old one finish within their grace period",
    ].join("\n"),
  );
  assert.equal(
    formatActivated([{ plugin: "notes", document: NOTES, changed: false }]),
    "  notes is unchanged: this file is its current version",
  );
  const text = formatActivated([
    { plugin: "notes", document: NOTES, changed: true },
    { plugin: "agent", document: { methods: [] }, changed: true },
  ], { reverted: true, force: true });
  assert.match(
    text,
    /^ {2}reverted notes \(version 1, methods add, list\)\n {2}reverted agent \(no methods\)\n/,
  );
  assert.match(text, /checks were skipped \(--force\)/);
});

Deno.test("an activation's report: the methods a new version removes, and its warnings", () => {
  const text = formatActivated([{ plugin: "notes", document: NOTES, changed: true }], {
    force: true,
    report: {
      removed: { notes: ["notes.delete"] },
      warnings: ['the new notes calls itself "www" in its rpc.discover document'],
    },
  });
  assert.match(text, /^ {2}activated notes \(version 1, methods add, list\)$/m);
  assert.match(text, /^ {2}notes no longer has notes\.delete$/m);
  assert.match(text, /^ {2}warning: the new notes calls itself "www"/m);
});
