/**
 * The child expressions of each binaryen expression kind, to read them and
 * to replace one: the walk that the module rewrites before compilation share
 * (`instrument.ts`, `pooled_memory.ts`), and how they read a module. A kind
 * missing here makes a walk fail loudly rather than leave part of a function
 * unseen.
 *
 * @module
 */
import binaryen from "binaryen";

// deno-lint-ignore no-explicit-any
const B = binaryen as any;
/**
 * `bytes` (a core module) read by binaryen for the rewrites, keeping its name
 * section: traps then name their function. The caller disposes of it.
 */
export function readModule(bytes: Uint8Array): binaryen.Module {
  B.setDebugInfo(true);
  return binaryen.readBinary(bytes);
}

/** A binaryen expression. */
export type Ref = number;

/** One child of an expression: what it is, and how to put another in its place. */
export interface Slot {
  ref: Ref;
  set(value: Ref): void;
}

interface Kind {
  get(e: Ref): Ref[];
  slots(e: Ref): Slot[];
}

type Cls = Record<string, (e: Ref, v?: Ref) => Ref>;

const leaf: Kind = { get: () => [], slots: () => [] };

/** Children in named fields, e.g. `fields(B.If, "Condition", "IfTrue", "IfFalse")`. */
function fields(cls: Cls, ...names: string[]): Kind {
  const getters = names.map((n) => cls[`get${n}`]);
  const setters = names.map((n) => cls[`set${n}`]);
  return {
    get: (e) => getters.map((get) => get(e)),
    slots: (e) => getters.map((get, i) => ({ ref: get(e), set: (v) => setters[i](e, v) })),
  };
}

/** Children in a list, e.g. `list(B.Call, "Operand")`, after the named `first` ones. */
function list(cls: Cls, item: string, plural = `${item}s`, ...first: string[]): Kind {
  const head = fields(cls, ...first);
  const count = cls[`getNum${plural}`];
  const at = cls[`get${item}At`] as (e: Ref, i: number) => Ref;
  const setAt = cls[`set${item}At`] as (e: Ref, i: number, v: Ref) => void;
  return {
    get(e) {
      const out = head.get(e);
      const n = count(e);
      for (let i = 0; i < n; i++) out.push(at(e, i));
      return out;
    },
    slots(e) {
      const out = head.slots(e);
      const n = count(e);
      for (let i = 0; i < n; i++) out.push({ ref: at(e, i), set: (v) => setAt(e, i, v) });
      return out;
    },
  };
}

const KINDS: Record<number, Kind> = {
  [B.BlockId]: list(B.Block, "Child", "Children"),
  [B.IfId]: fields(B.If, "Condition", "IfTrue", "IfFalse"),
  [B.LoopId]: fields(B.Loop, "Body"),
  [B.BreakId]: fields(B.Break, "Condition", "Value"),
  [B.SwitchId]: fields(B.Switch, "Condition", "Value"),
  [B.CallId]: list(B.Call, "Operand"),
  [B.CallIndirectId]: list(B.CallIndirect, "Operand", "Operands", "Target"),
  [B.LocalGetId]: leaf,
  [B.LocalSetId]: fields(B.LocalSet, "Value"),
  [B.GlobalGetId]: leaf,
  [B.GlobalSetId]: fields(B.GlobalSet, "Value"),
  [B.LoadId]: fields(B.Load, "Ptr"),
  [B.StoreId]: fields(B.Store, "Ptr", "Value"),
  [B.ConstId]: leaf,
  [B.UnaryId]: fields(B.Unary, "Value"),
  [B.BinaryId]: fields(B.Binary, "Left", "Right"),
  [B.SelectId]: fields(B.Select, "IfTrue", "IfFalse", "Condition"),
  [B.DropId]: fields(B.Drop, "Value"),
  [B.ReturnId]: fields(B.Return, "Value"),
  [B.MemorySizeId]: leaf,
  [B.MemoryGrowId]: fields(B.MemoryGrow, "Delta"),
  [B.NopId]: leaf,
  [B.UnreachableId]: leaf,
  [B.AtomicRMWId]: fields(B.AtomicRMW, "Ptr", "Value"),
  [B.AtomicCmpxchgId]: fields(B.AtomicCmpxchg, "Ptr", "Expected", "Replacement"),
  [B.AtomicWaitId]: fields(B.AtomicWait, "Ptr", "Expected", "Timeout"),
  [B.AtomicNotifyId]: fields(B.AtomicNotify, "Ptr", "NotifyCount"),
  [B.AtomicFenceId]: leaf,
  [B.SIMDExtractId]: fields(B.SIMDExtract, "Vec"),
  [B.SIMDReplaceId]: fields(B.SIMDReplace, "Vec", "Value"),
  [B.SIMDShuffleId]: fields(B.SIMDShuffle, "Left", "Right"),
  [B.SIMDTernaryId]: fields(B.SIMDTernary, "A", "B", "C"),
  [B.SIMDShiftId]: fields(B.SIMDShift, "Vec", "Shift"),
  [B.SIMDLoadId]: fields(B.SIMDLoad, "Ptr"),
  [B.SIMDLoadStoreLaneId]: fields(B.SIMDLoadStoreLane, "Ptr", "Vec"),
  [B.MemoryInitId]: fields(B.MemoryInit, "Dest", "Offset", "Size"),
  [B.DataDropId]: leaf,
  [B.MemoryCopyId]: fields(B.MemoryCopy, "Dest", "Source", "Size"),
  [B.MemoryFillId]: fields(B.MemoryFill, "Dest", "Value", "Size"),
  [B.PopId]: leaf,
  [B.RefNullId]: leaf,
  [B.RefIsNullId]: fields(B.RefIsNull, "Value"),
  [B.RefFuncId]: leaf,
  [B.RefEqId]: fields(B.RefEq, "Left", "Right"),
  [B.RefAsId]: fields(B.RefAs, "Value"),
  [B.TableGetId]: fields(B.TableGet, "Index"),
  [B.TableSetId]: fields(B.TableSet, "Index", "Value"),
  [B.TableSizeId]: leaf,
  [B.TableGrowId]: fields(B.TableGrow, "Value", "Delta"),
  [B.TupleMakeId]: list(B.TupleMake, "Operand"),
  [B.TupleExtractId]: fields(B.TupleExtract, "Tuple"),
};

/** The children of `e` (some may be 0, an absent child); undefined for an unknown kind. */
export function childrenOf(e: Ref): Ref[] | undefined {
  return KINDS[B._BinaryenExpressionGetId(e)]?.get(e);
}

/** The children of `e` with a setter each; undefined for an unknown kind. */
export function slotsOf(e: Ref): Slot[] | undefined {
  return KINDS[B._BinaryenExpressionGetId(e)]?.slots(e);
}
