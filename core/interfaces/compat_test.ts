import assert from "node:assert/strict";
import { checkImport, checkWorld, type OpenRpcDocument } from "./compat.ts";
import { renderImport, renderRejection } from "./report.ts";

type Json = Record<string, unknown>;

/** The notes plugin, as the SDK describes it (schemars 1.0 schemas). */
function notes(): OpenRpcDocument {
  return {
    openrpc: "1.2.6",
    info: { title: "notes", version: "0.1.0" },
    methods: [
      {
        name: "add",
        summary: "Add a note at the end of the list.",
        paramStructure: "by-name",
        params: [{
          name: "text",
          required: true,
          description: "The text of the new note. It can contain newlines.",
          schema: { type: "string", examples: ["milk"] },
        }],
        result: { name: "Added", schema: { $ref: "#/components/schemas/Added" } },
        "x-sausage-params": { $ref: "#/components/schemas/AddParams" },
      },
      {
        name: "list",
        summary: "List all notes, the oldest first.",
        paramStructure: "by-name",
        params: [],
        result: { name: "notes", schema: { type: "array", items: { type: "string" } } },
      },
      {
        name: "get",
        summary: "One note, or null when there is none at this index.",
        paramStructure: "by-name",
        params: [{
          name: "index",
          required: true,
          schema: { type: "integer", format: "uint", minimum: 0 },
        }],
        result: {
          name: "note",
          schema: { anyOf: [{ $ref: "#/components/schemas/Note" }, { type: "null" }] },
        },
        "x-sausage-params": { $ref: "#/components/schemas/GetParams" },
      },
    ],
    components: {
      schemas: {
        AddParams: {
          description: "The params of `add`.",
          type: "object",
          properties: {
            text: {
              description: "The text of the new note. It can contain newlines.",
              type: "string",
              examples: ["milk"],
            },
          },
          required: ["text"],
        },
        Added: {
          description: "The result of `add`.",
          type: "object",
          properties: {
            count: {
              description: "The number of notes after the call.",
              type: "integer",
              format: "uint",
              minimum: 0,
            },
          },
          required: ["count"],
        },
        GetParams: {
          type: "object",
          properties: { index: { type: "integer", format: "uint", minimum: 0 } },
          required: ["index"],
        },
        Note: {
          type: "object",
          properties: {
            text: { type: "string" },
            tags: { type: "array", items: { type: "string" }, uniqueItems: true },
            status: { $ref: "#/components/schemas/Status" },
            due: { type: ["string", "null"], format: "date-time" },
          },
          required: ["text", "tags", "status"],
        },
        Status: {
          oneOf: [
            { description: "Still to do.", type: "string", const: "open" },
            { description: "Done.", type: "string", const: "done" },
          ],
        },
      },
    },
  };
}

/** The www plugin, with its endpoint interface `control`. */
function www(): OpenRpcDocument {
  return {
    openrpc: "1.2.6",
    info: { title: "www", version: "0.1.0" },
    methods: [{
      name: "start",
      params: [{
        name: "port",
        required: true,
        schema: { type: "integer", format: "uint16", minimum: 0, maximum: 65535 },
      }],
      result: { name: "pid", schema: { type: "string" } },
    }],
    "x-sausage-endpoints": {
      control: {
        methods: [
          {
            name: "stats",
            params: [],
            result: { name: "hits", schema: { type: "integer", format: "uint64", minimum: 0 } },
          },
          { name: "stop", params: [], result: { name: "done", schema: { type: "null" } } },
        ],
      },
    },
    "x-sausage-grace": 5,
  };
}

/** The part of a document that a consumer imports: some methods, with all components. */
function part(doc: OpenRpcDocument, methods: string[], endpoints: Record<string, string[]> = {}) {
  const copy = structuredClone(doc);
  const keep = (list: unknown[] | undefined, names: string[]) =>
    (list ?? []).filter((m) => names.includes((m as Json).name as string));
  const out: OpenRpcDocument = {
    methods: keep(copy.methods, methods),
    components: copy.components,
  };
  if (Object.keys(endpoints).length > 0) {
    out["x-sausage-endpoints"] = Object.fromEntries(
      Object.entries(endpoints).map(([e, ms]) => [e, {
        methods: keep(copy["x-sausage-endpoints"]![e].methods, ms),
      }]),
    );
  }
  return out;
}

function agent(notesDoc = notes(), wwwDoc = www()): OpenRpcDocument {
  return {
    openrpc: "1.2.6",
    info: { title: "agent", version: "0.1.0" },
    methods: [{ name: "chat", params: [], result: { name: "text", schema: { type: "string" } } }],
    "x-sausage-imports": {
      notes: part(notesDoc, ["add", "list", "get"]),
      www: part(wwwDoc, ["start"], { control: ["stats"] }),
    },
  };
}

function schemas(doc: OpenRpcDocument): Json {
  return doc.components!.schemas as Json;
}

function only<T>(xs: T[]): T {
  assert.equal(xs.length, 1, JSON.stringify(xs, null, 2));
  return xs[0];
}

Deno.test("a world whose imports are copies of the current documents is ok", () => {
  const world = checkWorld({ agent: agent(), notes: notes(), www: www() });
  assert.deepEqual(world.counts, { ok: 2, broken: 0, missing: 0, unavailable: 0 });
  assert.deepEqual(world.imports.map((i) => [i.consumer, i.provider, i.status, i.methods]), [
    ["agent", "notes", "ok", ["add", "list", "get"]],
    ["agent", "www", "ok", ["start", "control.stats"]],
  ]);
});

Deno.test("compatible changes: a new method, an optional param, a result field, a wider type", () => {
  const next = notes();
  next.methods!.push({
    name: "clear",
    params: [],
    result: { name: "n", schema: { type: "null" } },
  });
  const add = schemas(next).AddParams as Json;
  (add.properties as Json).tags = { type: "array", items: { type: "string" } };
  const added = schemas(next).Added as Json;
  (added.properties as Json).total = { type: "integer", format: "uint64", minimum: 0 };
  added.required = ["count", "total"];
  // a param that may now also be null
  const get = schemas(next).GetParams as Json;
  (get.properties as Json).index = { type: ["integer", "null"], format: "uint64", minimum: 0 };
  const world = checkWorld({ agent: agent(), notes: next, www: www() });
  assert.equal(world.counts.broken, 0, JSON.stringify(world.imports, null, 2));
});

Deno.test("the example of PROTOCOL 10.3: a renamed param, word for word", () => {
  const next = notes();
  schemas(next).AddParams = {
    type: "object",
    properties: { body: { type: "string" } },
    required: ["body"],
  };
  const world = checkWorld({ agent: agent(), notes: next, www: www() });
  const broken = world.imports.filter((i) => i.status === "broken");
  const problem = only(only(broken).problems);
  assert.equal(problem.kind, "params");
  assert.equal(problem.signature, "notes.add(text: string) -> Added");
  assert.deepEqual(problem.counterexample, { text: "milk" });
  assert.equal(problem.text, 'notes.add has no param "text". It requires "body": string.');
  assert.equal(
    renderRejection(["notes"], broken),
    [
      "notes was not activated: 1 consumer breaks.",
      "- agent imports notes.add(text: string) -> Added.",
      '  The new notes.add has no param "text". It requires "body": string.',
      '  Counterexample: {"text": "milk"} is not valid for the new params.',
      "  Update agent first, or activate both together.",
    ].join("\n"),
  );
});

Deno.test("a result that can have a new enum value breaks its reader", () => {
  const next = notes();
  const status = schemas(next).Status as Json;
  (status.oneOf as unknown[]).push({ description: "Kept.", type: "string", const: "archived" });
  const problem = only(
    only(checkWorld({ agent: agent(), notes: next }, { only: ["notes"] }).imports).problems,
  );
  assert.equal(problem.kind, "result");
  assert.equal(problem.signature, "notes.get(index: u32) -> Note | null");
  assert.deepEqual(problem.counterexample, { text: "a", tags: [], status: "archived" });
  assert.deepEqual(problem.reason?.path, ["status"]);
  assert.equal(
    renderImport(only(checkWorld({ agent: agent(), notes: next }, { only: ["notes"] }).imports), {
      newProvider: true,
    }).join("\n"),
    [
      "- agent imports notes.get(index: u32) -> Note | null.",
      '  agent requires the result field "status" to be "open" | "done"; the new notes.get can return "open" | "done" | "archived".',
      '  Counterexample: {"text": "a", "tags": [], "status": "archived"} is a result that the new notes.get can return, and agent cannot read it.',
    ].join("\n"),
  );
});

Deno.test("a result field that becomes optional breaks; one that becomes nullable too", () => {
  const next = notes();
  (schemas(next).Added as Json).required = [];
  let problem = only(
    only(checkWorld({ agent: agent(), notes: next }, { only: ["notes"] }).imports).problems,
  );
  assert.equal(problem.kind, "result");
  assert.deepEqual(problem.counterexample, {});
  assert.equal(
    problem.text,
    'agent requires the result field "count": u32, and notes.add may leave it out.',
  );
  const nullable = notes();
  ((schemas(nullable).Added as Json).properties as Json).count = {
    type: ["integer", "null"],
    format: "uint",
    minimum: 0,
  };
  problem = only(
    only(checkWorld({ agent: agent(), notes: nullable }, { only: ["notes"] }).imports).problems,
  );
  assert.deepEqual(problem.counterexample, { count: null });
});

Deno.test("a removed method and a removed endpoint interface", () => {
  const next = notes();
  next.methods = next.methods!.filter((m) => (m as Json).name !== "get");
  const w = www();
  delete w["x-sausage-endpoints"];
  const world = checkWorld({ agent: agent(), notes: next, www: w });
  const [n, x] = world.imports;
  assert.deepEqual(only(n.problems).kind, "missing-method");
  assert.equal(only(n.problems).text, "notes has no method get.");
  assert.deepEqual(only(x.problems).kind, "missing-endpoint");
  assert.equal(only(x.problems).text, 'www has no endpoint interface "control".');
  assert.equal(
    renderRejection(["www"], [x]),
    [
      "www was not activated: 1 consumer breaks.",
      "- agent imports the endpoint interface www.control.",
      '  The new www has no endpoint interface "control".',
      "  Update agent first, or activate both together.",
    ].join("\n"),
  );
});

Deno.test("endpoint methods and params are checked like main methods", () => {
  const w = www();
  const stats = w["x-sausage-endpoints"]!.control.methods![0] as Json;
  stats.result = { name: "hits", schema: { type: "integer", format: "int64" } };
  const start = w.methods![0] as Json;
  start.params = [{
    name: "port",
    required: true,
    schema: { type: "integer", format: "uint8", minimum: 0 },
  }];
  const problems =
    only(checkWorld({ agent: agent(), www: w }).imports.filter((i) => i.provider === "www"))
      .problems;
  assert.deepEqual(problems.map((p) => [p.endpoint, p.method, p.kind, p.counterexample]), [
    [null, "start", "params", { port: 256 }],
    ["control", "stats", "result", -1],
  ]);
  assert.equal(
    problems[1].signature,
    "www.control.stats() -> u64",
  );
  assert.equal(
    problems[0].text,
    'www.start requires the param "port" to be u8; agent can send u16.',
  );
});

Deno.test("a construct outside the subset fails the check and says where", () => {
  const next = notes();
  ((schemas(next).Note as Json).properties as Json).text = { type: "string", minLength: 1 };
  const problem = only(
    only(checkWorld({ agent: agent(), notes: next }, { only: ["notes"] }).imports).problems,
  );
  assert.equal(problem.kind, "outside-subset");
  assert.equal(problem.part, "result");
  assert.deepEqual(problem.outside, [{
    construct: "minLength",
    path: "#/components/schemas/Note/properties/text",
    detail: "a length of strings",
    side: "provider",
  }]);
  assert.match(
    problem.text,
    /^The result of notes.get uses "minLength" at #\/components\/schemas\/Note\/properties\/text/,
  );
  // on the consumer's side, the path is in the consumer's document
  const consumer = agent();
  const imported = consumer["x-sausage-imports"]!.notes;
  ((imported.components!.schemas as Json).AddParams as Json).properties = {
    text: { type: "string", pattern: "." },
  };
  const mine = only(
    only(checkWorld({ agent: consumer, notes: notes() }, { only: ["notes"] }).imports).problems,
  );
  assert.equal(
    mine.outside?.[0].path,
    "#/x-sausage-imports/notes/components/schemas/AddParams/properties/text",
  );
  assert.equal(mine.outside?.[0].side, "consumer");
});

Deno.test("missing and unavailable providers; unavailable consumers have no known imports", () => {
  const world = checkWorld(
    new Map<string, OpenRpcDocument | "unavailable" | { unavailable: string }>([
      ["agent", agent()],
      ["www", { unavailable: "no answer to rpc.discover within 10 s" }],
      ["broken", "unavailable"],
    ]),
  );
  assert.deepEqual(world.imports.map((i) => [i.provider, i.status, i.detail]), [
    ["notes", "missing", undefined],
    ["www", "unavailable", "no answer to rpc.discover within 10 s"],
  ]);
  assert.deepEqual(world.imports[0].methods, ["add", "list", "get"]);
  assert.deepEqual(world.counts, { ok: 0, broken: 0, missing: 1, unavailable: 1 });
  assert.deepEqual(renderImport(world.imports[1]), [
    "- agent imports www (start, control.stats).",
    "  www is unavailable: no answer to rpc.discover within 10 s. The import cannot be checked.",
  ]);
});

Deno.test("only: the imports of and the imports from the given plugins", () => {
  const tags: OpenRpcDocument = {
    methods: [],
    "x-sausage-imports": { notes: part(notes(), ["list"]) },
  };
  const docs = { agent: agent(), notes: notes(), www: www(), tags };
  assert.equal(checkWorld(docs).imports.length, 3);
  assert.deepEqual(
    checkWorld(docs, { only: ["notes"] }).imports.map((i) => `${i.consumer}→${i.provider}`),
    ["agent→notes", "tags→notes"],
  );
  assert.deepEqual(
    checkWorld(docs, { only: ["tags"] }).imports.map((i) => `${i.consumer}→${i.provider}`),
    ["tags→notes"],
  );
});

Deno.test("params from the params list: required defaults to false, descriptors by $ref", () => {
  const provider = (required: boolean): OpenRpcDocument => ({
    methods: [{
      name: "find",
      params: [
        { name: "query", required: true, schema: { type: "string" } },
        { $ref: "#/components/contentDescriptors/Limit" },
      ],
      result: { name: "hits", schema: { type: "array", items: { type: "string" } } },
    }],
    components: {
      contentDescriptors: {
        Limit: { name: "limit", required, schema: { type: "integer", format: "uint16" } },
      },
    },
  });
  const imported: OpenRpcDocument = {
    methods: [{
      name: "find",
      params: [{ name: "query", required: true, schema: { type: "string" } }],
      result: { name: "hits", schema: { type: "array", items: { type: "string" } } },
    }],
  };
  const ok = checkImport(imported, provider(false), { consumer: "agent", provider: "search" });
  assert.deepEqual(ok, { ok: true, methods: ["find"], problems: [] });
  // a new version that requires the limit
  const r = checkImport(imported, provider(true), { consumer: "agent", provider: "search" });
  assert.equal(
    only(r.problems).text,
    'search.find requires the param "limit": u16, and agent may leave it out.',
  );
  assert.equal(only(r.problems).signature, "search.find(query: string) -> string[]");
});

Deno.test("$refs of an import resolve in the import entry, then in the consumer's document", () => {
  const consumer: OpenRpcDocument = {
    methods: [],
    components: { schemas: { Count: { type: "integer", format: "uint8", minimum: 0 } } },
    "x-sausage-imports": {
      counter: {
        methods: [{
          name: "get",
          params: [],
          result: { name: "n", schema: { $ref: "#/components/schemas/Count" } },
        }],
      },
    },
  };
  const provider = (format: string): OpenRpcDocument => ({
    methods: [{
      name: "get",
      params: [],
      result: { name: "n", schema: { type: "integer", format, minimum: 0 } },
    }],
  });
  assert.equal(checkWorld({ consumer, counter: provider("uint8") }).counts.ok, 1);
  const broken = only(checkWorld({ consumer, counter: provider("uint16") }).imports);
  assert.equal(only(broken.problems).counterexample, 256);
  assert.equal(only(broken.problems).signature, "counter.get() -> Count");
});

Deno.test("results: a consumer without a result schema reads anything; a provider without one may return anything", () => {
  const imported = { methods: [{ name: "ping", params: [] }] };
  const provider = {
    methods: [{ name: "ping", params: [], result: { name: "r", schema: { type: "string" } } }],
  };
  assert.ok(checkImport(imported, provider).ok);
  const reader = {
    methods: [{ name: "ping", params: [], result: { name: "r", schema: { type: "string" } } }],
  };
  const silent = { methods: [{ name: "ping", params: [] }] };
  const r = checkImport(reader, silent, { consumer: "a", provider: "b" });
  assert.equal(only(r.problems).kind, "result");
});

Deno.test("rejections: own imports, several plugins, missing providers", () => {
  const next = agent();
  const imported = next["x-sausage-imports"]!.notes;
  ((imported.components!.schemas as Json).Added as Json).required = ["count", "total"];
  ((((imported.components!.schemas as Json).Added as Json).properties) as Json).total = {
    type: "integer",
  };
  next["x-sausage-imports"]!.tags = { methods: [{ name: "list", params: [] }] };
  const world = checkWorld({ agent: next, notes: notes(), www: www() }, { only: ["agent"] });
  const bad = world.imports.filter((i) => i.status !== "ok");
  assert.equal(
    renderRejection(["agent"], bad),
    [
      "agent was not activated: 2 of its imports break.",
      "- the new agent imports notes.add(text: string) -> Added.",
      '  The new agent requires the result field "total": integer, and notes.add may leave it out.',
      '  Counterexample: {"count": 0} is a result that notes.add can return, and the new agent cannot read it.',
      "  Update notes first, or activate both together.",
      "- the new agent imports tags (list).",
      "  There is no plugin tags.",
      "  Add tags first, or remove the import.",
    ].join("\n"),
  );
  const n = notes();
  schemas(n).AddParams = {
    type: "object",
    properties: { body: { type: "string" } },
    required: ["body"],
  };
  const both = checkWorld({ agent: agent(), notes: n, www: www() }).imports.filter((i) =>
    i.status === "broken"
  );
  assert.match(
    renderRejection(["notes", "agent"], both),
    /^notes and agent were not activated: 1 of their imports breaks\./,
  );
  assert.match(
    renderRejection(["notes", "agent"], both),
    /Change agent or notes so that they fit\.$/,
  );
});

Deno.test("documents are kept by identity: a second check of the same world gives the same answer", () => {
  const docs = { agent: agent(), notes: notes(), www: www() };
  const first = checkWorld(docs);
  const second = checkWorld(docs);
  assert.deepEqual(second, first);
});
