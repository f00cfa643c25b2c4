/**
 * Instruments a core wasm module so that the host can preempt and kill it.
 *
 * `worker.terminate()` cannot stop a worker that spins in wasm, and V8 offers
 * no epoch interruption. So each loop header gets a check of a per-instance
 * cell in a small shared memory that the host writes from another thread:
 *
 * ```wat
 * (if (i32.load $sausage_interrupts (global.get $sausage_cell))
 *   (then (if (call $sausage_interrupted (global.get $sausage_in_host))
 *     (then (call $sausage_yield)))))
 * ```
 *
 * `interrupted` is a plain import: it traps for a kill and says whether to
 * yield. `yield` is a JSPI-suspending import. Suspending is only possible
 * when no JS frame sits between the guest and its `promising` entry, which is
 * not the case while the host lowers a result into guest memory (it calls
 * `cabi_realloc`, which loops). So every call to an imported function is
 * bracketed by a module-local flag, `in_host`, and the host never yields
 * while it is set. Kills work anywhere.
 *
 * @module
 */
import binaryen from "binaryen";
import { INTERRUPT_MODULE } from "../../runtime/messages.ts";
import { childrenOf, readModule, type Ref } from "./expressions.ts";

// deno-lint-ignore no-explicit-any
const B = binaryen as any;

/** What the instrumentation did, for the cache metadata and tests. */
export interface InstrumentReport {
  /** Loop headers that got a check. */
  loops: number;
  /** Calls to imported functions that got the `in_host` bracket. */
  hostCalls: number;
  /**
   * The first instruction that changes a table or drops a segment, and its
   * function: state a reused instance could not have put back
   * (`recycle.ts`); undefined when there is none.
   */
  unresettable?: string;
}

/** Raised for a module that cannot be instrumented (the message says why). */
export class InstrumentError extends Error {
  override name = "InstrumentError";
}

const IRQ_MEMORY = "sausage$interrupts";
const CELL = "sausage$cell";
const IN_HOST = "sausage$in_host";
const INTERRUPTED = "sausage$interrupted";
const YIELD = "sausage$yield";
/** Instructions whose effect a reset from JS cannot undo, by binaryen expression ID. */
const UNRESETTABLE: Record<number, string> = {
  [B.TableSetId]: "table.set",
  [B.TableGrowId]: "table.grow",
  [B.DataDropId]: "data.drop",
};

/**
 * Adds the interrupt checks to `bytes` (a core module) and returns the new
 * module. A module without loops is returned unchanged.
 */
export function instrument(bytes: Uint8Array): { bytes: Uint8Array; report: InstrumentReport } {
  const mod = readModule(bytes);
  try {
    const report = instrumentModule(mod);
    return { bytes: report.loops === 0 ? bytes : mod.emitBinary(), report };
  } finally {
    mod.dispose();
  }
}

/**
 * Adds the interrupt checks to `mod` in place, as {@linkcode instrument}
 * does to bytes: a module without loops is left untouched (its report
 * counts no loops), so that its bytes need not be written again.
 */
export function instrumentModule(mod: binaryen.Module): InstrumentReport {
  const report: InstrumentReport = { loops: 0, hostCalls: 0 };
  const functions: Ref[] = [];
  const imported = new Map<string, Ref>();
  for (let i = 0; i < mod.getNumFunctions(); i++) {
    const f = mod.getFunctionByIndex(i);
    const info = binaryen.getFunctionInfo(f);
    if (info.module) imported.set(info.name, f);
    else functions.push(f);
  }

  // First pass: find loops and calls to imports, so that a module without
  // loops stays byte-for-byte as it was.
  const loops: Ref[] = [];
  const importCalls: Ref[] = [];
  for (const f of functions) {
    const stack: Ref[] = [B._BinaryenFunctionGetBody(f)];
    while (stack.length > 0) {
      const e = stack.pop()!;
      if (!e) continue;
      const id = B._BinaryenExpressionGetId(e);
      const children = childrenOf(e);
      if (!children) {
        throw new InstrumentError(
          `unsupported wasm instruction (binaryen expression id ${id}) in function ` +
            `${binaryen.getFunctionInfo(f).name}: Sausage cannot make it preemptible`,
        );
      }
      for (const child of children) if (child) stack.push(child);
      if (!report.unresettable && UNRESETTABLE[id]) {
        report.unresettable = `function ${binaryen.getFunctionInfo(f).name} uses ${
          UNRESETTABLE[id]
        }`;
      }
      if (id === B.LoopId) loops.push(e);
      else if (id === B.CallId && imported.has(B.Call.getTarget(e))) importCalls.push(e);
    }
  }
  if (loops.length === 0) return report;

  mod.setFeatures(mod.getFeatures() | binaryen.Features.Atomics | binaryen.Features.MultiMemory);
  mod.addMemoryImport(IRQ_MEMORY, INTERRUPT_MODULE, "interrupts", true);
  // mutable: an instance that serves one process after another gets each one's cell
  mod.addGlobalImport(CELL, INTERRUPT_MODULE, "cell", binaryen.i32, true);
  mod.addFunctionImport(INTERRUPTED, INTERRUPT_MODULE, "interrupted", binaryen.i32, binaryen.i32);
  mod.addFunctionImport(YIELD, INTERRUPT_MODULE, "yield", binaryen.none, binaryen.none);
  mod.addGlobal(IN_HOST, binaryen.i32, true, mod.i32.const(0));

  // Each imported function gets a bracketing wrapper; calls are redirected.
  const wrappers = new Map<string, string>();
  for (const [name, f] of imported) {
    const info = binaryen.getFunctionInfo(f);
    const params = binaryen.expandType(info.params);
    const args = params.map((type, i) => mod.local.get(i, type));
    const call = mod.call(name, args, info.results);
    const enter = mod.global.set(IN_HOST, mod.i32.const(1));
    const leave = mod.global.set(IN_HOST, mod.i32.const(0));
    let body: Ref;
    let vars: number[] = [];
    if (info.results === binaryen.none) {
      body = mod.block(null, [enter, call, leave], binaryen.none);
    } else {
      const result = params.length;
      vars = [info.results];
      body = mod.block(null, [
        enter,
        mod.local.set(result, call),
        leave,
        mod.local.get(result, info.results),
      ], info.results);
    }
    const wrapper = `sausage$host$${name}`;
    mod.addFunction(wrapper, info.params, info.results, vars, body);
    wrappers.set(name, wrapper);
  }
  for (const call of importCalls) {
    B.Call.setTarget(call, wrappers.get(B.Call.getTarget(call)));
    report.hostCalls++;
  }

  for (const loop of loops) {
    const body = B.Loop.getBody(loop);
    const flag = mod.i32.load(0, 4, mod.global.get(CELL, binaryen.i32), IRQ_MEMORY);
    const decide = mod.call(INTERRUPTED, [mod.global.get(IN_HOST, binaryen.i32)], binaryen.i32);
    const check = mod.if(flag, mod.if(decide, mod.call(YIELD, [], binaryen.none)));
    B.Loop.setBody(loop, mod.block(null, [check, body], binaryen.getExpressionType(body)));
    report.loops++;
  }
  return report;
}
