/**
 * The `rpc.discover` documents that the SDK generates, checked against the
 * OpenRPC 1.2 meta-schema (`@open-rpc/meta-schema`): the examples and the
 * SDK's test plugin, asked through a world. Each schema in them must be a
 * valid JSON Schema Draft 7, each `$ref` must resolve, and values the
 * plugins read and write must be valid for their schemas.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import * as jsonSchemaMetaSchema from "@json-schema-tools/meta-schema";
import * as openrpcMetaSchema from "@open-rpc/meta-schema";
import { Ajv } from "ajv";
import { startWorld } from "../tests/world.ts";
import { install } from "./build.ts";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Doc = { [key: string]: Json };

const META = (openrpcMetaSchema as unknown as { openrpcDocument: Record<string, unknown> })
  .openrpcDocument;
/** The JSON Schema meta-schema that the OpenRPC one refers to. */
const JSON_SCHEMA_META =
  (jsonSchemaMetaSchema as unknown as { jsonSchema: Record<string, unknown> })
    .jsonSchema;
const PLUGINS = ["notes", "www", "secrets", "probe", "client"];

let documents: Promise<Record<string, Doc>> | undefined;

/** The documents of all SDK plugins, from one world. */
function discover(): Promise<Record<string, Doc>> {
  documents ??= (async () => {
    await using w = await startWorld({ plugins: {} });
    await install(w.root, Object.fromEntries(PLUGINS.map((p) => [p, p])));
    const out: Record<string, Doc> = {};
    for (const p of PLUGINS) out[p] = (await w.call(`${p}.rpc.discover`)) as Doc;
    return out;
  })();
  return documents;
}

function ajv(): Ajv {
  return new Ajv({ strict: false, allErrors: true, logger: false });
}

/** Every `$ref` under `value`, with where it is. */
function refs(value: Json, path = "#"): [string, string][] {
  if (Array.isArray(value)) return value.flatMap((v, i) => refs(v, `${path}/${i}`));
  if (value && typeof value === "object") {
    return Object.entries(value).flatMap(([k, v]) =>
      k === "$ref" && typeof v === "string"
        ? [[v, path] as [string, string]]
        : refs(v, `${path}/${k}`)
    );
  }
  return [];
}

/** Every method of a document: the main interface's and the endpoints'. */
function methods(doc: Doc): Doc[] {
  const main = doc.methods as Doc[];
  const endpoints = Object.values((doc["x-sausage-endpoints"] ?? {}) as Record<string, Doc>)
    .flatMap((e) => e.methods as Doc[]);
  return [...main, ...endpoints];
}

for (const name of PLUGINS) {
  Deno.test(`${name}: rpc.discover is a valid OpenRPC 1.2 document`, async () => {
    const doc = (await discover())[name];
    const { $schema: _a, ...meta } = META;
    const { $schema: _b, $id: _c, ...jsonSchemaMeta } = JSON_SCHEMA_META;
    const checker = ajv();
    // the OpenRPC meta-schema refers to it with and without the final slash
    checker.addSchema(jsonSchemaMeta, "https://meta.json-schema.tools");
    checker.addSchema(structuredClone(jsonSchemaMeta), "https://meta.json-schema.tools/");
    const validate = checker.compile(meta);
    assert.ok(validate(doc), JSON.stringify(validate.errors, null, 2));
    const { info: _info, ...withoutInfo } = doc;
    assert.ok(!validate(withoutInfo), "the meta-schema rejects a document without info");
    assert.equal(doc.openrpc, "1.2.6");
    assert.equal((doc.info as Doc).title, name);
  });

  Deno.test(`${name}: its schemas are Draft 7, its $refs resolve, its docs are there`, async () => {
    const doc = (await discover())[name];
    const schemas = ((doc.components as Doc)?.schemas ?? {}) as Record<string, Doc>;
    const checker = ajv();
    for (const [schemaName, schema] of Object.entries(schemas)) {
      assert.ok(checker.validateSchema(schema), `${schemaName}: ${JSON.stringify(checker.errors)}`);
      assert.ok(typeof schema.description === "string", `${schemaName} has no description`);
    }
    const { "x-sausage-imports": imports, ...own } = doc;
    for (const [ref, where] of refs(own as Json)) {
      const target = ref.match(/^#\/components\/schemas\/(.+)$/)?.[1];
      assert.ok(target && schemas[target], `${where}: ${ref} does not resolve`);
    }
    // each import is a part of its provider's document: its $refs point into its own components
    for (const [provider, part] of Object.entries((imports ?? {}) as Record<string, Doc>)) {
      const theirs = ((part.components as Doc)?.schemas ?? {}) as Record<string, Doc>;
      for (const [ref, where] of refs(part as Json)) {
        const target = ref.match(/^#\/components\/schemas\/(.+)$/)?.[1];
        assert.ok(
          target && theirs[target],
          `imports ${provider} ${where}: ${ref} does not resolve`,
        );
      }
    }
    for (const method of methods(doc)) {
      assert.equal(typeof method.summary, "string", `${method.name} has no summary`);
      assert.equal(method.paramStructure, "by-name");
      for (const param of method.params as Doc[]) {
        assert.equal(
          typeof param.description,
          "string",
          `${method.name}(${param.name}) has no description`,
        );
        assert.ok(checker.validateSchema(param.schema as Doc));
      }
      assert.ok(checker.validateSchema((method.result as Doc).schema as Doc));
    }
  });
}

Deno.test("a binary in src/bin/ is described by its own docs, and so is its endpoint", async () => {
  await using w = await startWorld({ plugins: {} });
  await install(w.root, { counter: "counter_v1" });
  const doc = (await w.call("counter.rpc.discover")) as Doc;
  // not the docs of the crate's library, which both binaries share
  assert.equal(
    (doc.info as Doc).description,
    "The counter, version 1: the count is text in `count.txt`.",
  );
  const hits = (doc["x-sausage-endpoints"] as Record<string, Doc>).hits;
  assert.equal(hits.description, "The endpoint of the running service.");
});

/** Validates `value` against a schema of a document, resolving its `$ref`s. */
function validator(doc: Doc, schema: Json) {
  const a = ajv();
  a.addSchema({ components: doc.components } as Record<string, unknown>, "doc");
  const rewritten = JSON.parse(
    JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/'),
  );
  return a.compile(rewritten);
}

Deno.test("params and results the plugins read and write fit their schemas", async () => {
  const docs = await discover();
  const notes = docs.notes;
  const add = (notes.methods as Doc[]).find((m) => m.name === "add")!;
  const params = validator(notes, add["x-sausage-params"]);
  assert.ok(params({ text: "milk" }));
  assert.ok(!params({ txt: "milk" }));
  const result = validator(notes, (add.result as Doc).schema);
  assert.ok(result({ count: 1 }));
  assert.ok(!result({ count: -1 }));
  const www = docs.www;
  const start = (www.methods as Doc[]).find((m) => m.name === "start")!;
  const port = validator(www, start["x-sausage-params"]);
  assert.ok(port({ port: 8080 }));
  assert.ok(!port({ port: 70000 }));
  assert.equal(www["x-sausage-grace"], 5);
  const control = (www["x-sausage-endpoints"] as Record<string, Doc>).control;
  assert.equal(control.description, "The control endpoint of a running server.");
  assert.deepEqual((control.methods as Doc[]).map((m) => m.name), ["stats", "stop"]);
  const get = ((docs.secrets["x-sausage-endpoints"] as Record<string, Doc>).vault.methods as Doc[])
    .find((m) => m.name === "get")!;
  const secret = validator(docs.secrets, (get.result as Doc).schema);
  assert.ok(secret("s3cret") && secret(null) && !secret(3));
});

/**
 * The Rust tests import the examples from copies of their documents. With
 * `SDK_UPDATE_IMPORTS=1`, this test writes the current documents there.
 */
Deno.test("the copies of the examples' documents in sdk/ui-tests are current", async () => {
  const docs = await discover();
  const dirs = [
    "ui-tests/imports",
    "ui-tests/fixtures/consumer/imports",
    "sausage-plugin/imports",
    "sausage-plugin-macros/imports",
  ];
  const update = Deno.env.get("SDK_UPDATE_IMPORTS") === "1";
  for (const dir of dirs) {
    for (const name of ["notes", "www", "secrets"]) {
      const path = new URL(`./${dir}/${name}.json`, import.meta.url);
      if (!existsSync(path)) continue; // each folder has the copies its tests import
      if (update) await Deno.writeTextFile(path, JSON.stringify(docs[name], null, 2) + "\n");
      const copy = JSON.parse(await Deno.readTextFile(path));
      assert.deepEqual(
        copy,
        docs[name],
        `sdk/${dir}/${name}.json differs from ${name}.rpc.discover: run this test with SDK_UPDATE_IMPORTS=1`,
      );
    }
  }
});

Deno.test("the test client's pruned imports are parts of the current documents", async () => {
  const docs = await discover();
  for (const name of ["notes", "www", "secrets"]) {
    const path = new URL(`./test-plugins/client/imports/${name}.json`, import.meta.url);
    const copy = JSON.parse(await Deno.readTextFile(path)) as Doc;
    const current = docs[name];
    const byName = (list: Json) => new Map((list as Doc[]).map((m) => [m.name, m]));
    const now = byName(current.methods);
    for (const [method, doc] of byName(copy.methods)) {
      assert.deepEqual(doc, now.get(method), `${name}.${method} changed: update ${path.pathname}`);
    }
    const endpoints = (copy["x-sausage-endpoints"] ?? {}) as Record<string, Doc>;
    for (const [endpoint, entry] of Object.entries(endpoints)) {
      const nowEndpoint = byName(
        (current["x-sausage-endpoints"] as Record<string, Doc>)[endpoint].methods,
      );
      for (const [method, doc] of byName(entry.methods)) {
        assert.deepEqual(doc, nowEndpoint.get(method), `${name}.${endpoint}.${method} changed`);
      }
    }
    assert.deepEqual(copy.components, current.components);
  }
});

Deno.test("a consumer's document has the parts of its providers' documents that it imports", async () => {
  const docs = await discover();
  const imports = docs.client["x-sausage-imports"] as Record<string, Doc>;
  assert.deepEqual(Object.keys(imports).sort(), ["notes", "secrets", "www"]);
  assert.deepEqual((imports.notes.methods as Doc[]).map((m) => m.name), ["add"]);
  const vault = (imports.secrets["x-sausage-endpoints"] as Record<string, Doc>).vault;
  assert.deepEqual((vault.methods as Doc[]).map((m) => m.name), ["set", "get", "names"]);
});
