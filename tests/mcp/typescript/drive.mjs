// The official TypeScript SDK's Client driving a stdio MCP server, for
// tests/mcp/test_typescript_client.py. Arguments: the SDK's package directory, then the
// server's command line. It connects, lists the tools (so the client checks each answer
// against the tool's outputSchema, as the MCP Inspector does), writes one JSON line, then
// answers each JSON line of stdin ({"tool", "arguments"}) with one JSON line: {"result"}
// as the client returned it, or {"thrown": {code, message}} when the client refused it.
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const [sdkDir, command, ...args] = process.argv.slice(2);
const load = (relative) => import(pathToFileURL(join(sdkDir, "dist", "esm", relative)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");

const emit = (value) => process.stdout.write(JSON.stringify(value) + "\n");
const client = new Client({ name: "workrail-typescript-test", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" }));
const listed = await client.listTools();
emit({ tools: listed.tools.map((tool) => tool.name) });
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const request = JSON.parse(line);
  try {
    emit({ result: await client.callTool({ name: request.tool, arguments: request.arguments }) });
  } catch (thrown) {
    emit({ thrown: { code: thrown?.code ?? null, message: String(thrown?.message ?? thrown) } });
  }
}
await client.close();
