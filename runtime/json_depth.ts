/**
 * The nesting depth of JSON-RPC messages (PROTOCOL section 3.1). The host
 * clones messages between threads and formats them with code that recurses,
 * so a message nested thousands deep would overflow its stack; it is refused
 * before anything recursive sees it.
 *
 * @module
 */
import { MAX_JSON_DEPTH } from "../protocol/limits.ts";
export { MAX_JSON_DEPTH };

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Whether JSON text nests arrays and objects deeper than `max`, counted by
 * a scan of the brackets outside strings (it does not check the syntax).
 *
 * @example
 * ```ts
 * import { jsonTextTooDeep } from "./json_depth.ts";
 * jsonTextTooDeep('{"a": [[1]]}', 2); // true
 * jsonTextTooDeep('{"a": "[[["}', 2); // false
 * ```
 */
export function jsonTextTooDeep(text: string, max: number = MAX_JSON_DEPTH): boolean {
  if (text.length <= max) return false; // too short to hold max + 1 brackets
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/**
 * Whether a value nests arrays and objects deeper than `max`, walked
 * without recursion. A cycle is too deep; an object reached twice is
 * walked once.
 *
 * @example
 * ```ts
 * import { valueTooDeep } from "./json_depth.ts";
 * valueTooDeep({ a: [[1]] }, 2); // true
 * valueTooDeep({ a: [1, 2] }, 2); // false
 * ```
 */
export function valueTooDeep(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  if (typeof value !== "object" || value === null) return false;
  interface Frame {
    node: object;
    children: unknown[];
    next: number;
    /** Levels from this node down, so far. */
    height: number;
  }
  const heights = new Map<object, number>(); // of walked objects: shared ones cost once
  const onPath = new Set<object>();
  const path: Frame[] = [];
  const enter = (node: object) => {
    onPath.add(node);
    path.push({
      node,
      children: Array.isArray(node) ? node : Object.values(node),
      next: 0,
      height: 1,
    });
  };
  enter(value);
  while (path.length > 0) {
    const frame = path[path.length - 1];
    if (frame.next < frame.children.length) {
      const child = frame.children[frame.next++];
      if (typeof child !== "object" || child === null) continue;
      if (onPath.has(child)) return true;
      const known = heights.get(child);
      if (known !== undefined) {
        if (path.length + known > max) return true;
        frame.height = Math.max(frame.height, known + 1);
        continue;
      }
      if (path.length + 1 > max) return true;
      enter(child);
      continue;
    }
    path.pop();
    onPath.delete(frame.node);
    heights.set(frame.node, frame.height);
    const parent = path[path.length - 1];
    if (parent) parent.height = Math.max(parent.height, frame.height + 1);
  }
  return false;
}
