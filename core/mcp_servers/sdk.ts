/**
 * The parts of the MCP SDK the native plugin `mcp` uses. `plugin.ts` loads
 * this module at its first connection, not at the host's start: the SDK's
 * client costs about 150 ms to load, and most worlds configure no server.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/client"
export { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
export { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
export { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/types"
export { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
export { jsonSchemaValidator } from "./validator.ts";
