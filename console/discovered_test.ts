import assert from "node:assert/strict";
import { exampleParams, methodNames } from "./discovered.ts";

const CARGO = {
  methods: [{
    name: "build",
    params: [{ name: "plugin", required: true, schema: { type: "string" } }],
  }],
};

Deno.test("methodNames: the full names, sorted, without rpc.* and for documents only", () => {
  assert.deepEqual(
    methodNames("notes", {
      methods: [{ name: "list" }, { name: "add" }, { name: "rpc.discover" }],
    }),
    ["notes.add", "notes.list"],
  );
  assert.deepEqual(methodNames("x", null), []);
  assert.deepEqual(methodNames("x", { methods: "no" }), []);
});

Deno.test("exampleParams: the method's own params, not another method's", () => {
  assert.equal(exampleParams(CARGO, "build"), '{"plugin": "notes"}');
  assert.equal(exampleParams(CARGO, "nothere"), null);
  assert.equal(exampleParams({ methods: [{ name: "echo", params: [] }] }, "echo"), "{}");
});

Deno.test("exampleParams: an example of the document first, then required params by their schema", () => {
  const document = {
    methods: [
      {
        name: "add",
        params: [{ name: "text", required: true, schema: { type: "string" } }],
        examples: [{ name: "milk", params: [{ name: "text", value: "milk" }] }],
      },
      {
        name: "find",
        params: [
          { name: "limit", required: true, schema: { type: "integer", minimum: 5 } },
          { name: "tag", required: true, schema: { enum: ["red", "blue"] } },
          { name: "deep", schema: { type: "boolean" } },
        ],
      },
      { name: "opt", params: [{ name: "verbose", schema: { type: "boolean", default: false } }] },
    ],
  };
  assert.equal(exampleParams(document, "add"), '{"text": "milk"}');
  assert.equal(exampleParams(document, "find"), '{"limit": 5, "tag": "red"}');
  assert.equal(exampleParams(document, "opt"), '{"verbose": false}');
});
