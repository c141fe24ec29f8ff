// interop.mjs drives ampagent's MCP server with the official TypeScript
// SDK (@modelcontextprotocol/sdk), an independent client, and checks what
// the Go side promises: initialize, tools/list (schemas equal to the stored
// ones), a successful call, a schema violation, a tampered bundle (an error,
// and no run: the Go test counts the handler's runs).
//
// Usage: node interop.mjs PLAN.json
//
// PLAN.json (written by the Go test, cmd/ampagent/mcp_interop_test.go):
//   {"transport": "stdio", "command": "/path/ampagent", "args": [...]}
//   or {"transport": "http", "url": "http://127.0.0.1:PORT/mcp", "token": "..."}
//   plus "tool", "input_schema", "output_schema" (expected, as JSON),
//   "good_args", "good_result", "bad_args", "violation_code", "tampered_tool".
// It prints one JSON line {"ok": true, ...} and exits 0, or prints the
// failure on stderr and exits 1.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const META = "io.github.ampbundle/verified";

function fail(msg) {
  process.stderr.write(`interop: ${msg}\n`);
  process.exit(1);
}

// canonical renders a JSON value with sorted keys, for equality.
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v && typeof v === "object") {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`;
  }
  return JSON.stringify(v);
}

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
let transport;
if (plan.transport === "stdio") {
  transport = new StdioClientTransport({ command: plan.command, args: plan.args, stderr: "inherit" });
} else if (plan.transport === "http") {
  transport = new StreamableHTTPClientTransport(new URL(plan.url), {
    requestInit: { headers: { Authorization: `Bearer ${plan.token}` } },
  });
} else {
  fail(`unknown transport ${plan.transport}`);
}

const client = new Client({ name: "ampbundle-interop", version: "1.0.0" });
const report = { ok: false, transport: plan.transport };
try {
  await client.connect(transport);
  report.server = client.getServerVersion()?.name;
  const caps = client.getServerCapabilities();
  if (!caps?.tools?.listChanged) fail("the server does not announce tools.listChanged");

  const { tools } = await client.listTools();
  report.tools = tools.map((t) => t.name).sort();
  const tool = tools.find((t) => t.name === plan.tool);
  if (!tool) fail(`tool ${plan.tool} is not listed (got ${report.tools})`);
  if (canonical(tool.inputSchema) !== canonical(plan.input_schema)) fail("inputSchema differs from the stored schema");
  if (canonical(tool.outputSchema) !== canonical(plan.output_schema)) fail("outputSchema differs from the stored schema");
  const meta = tool._meta?.[META];
  if (!meta || meta.capability === undefined || !meta.input_schema?.sha256) fail("the tool has no verified _meta");
  if (tools.some((t) => t.name === plan.tampered_tool)) fail("the tampered tool is listed");

  const good = await client.callTool({ name: plan.tool, arguments: plan.good_args });
  if (good.isError) fail(`the good call failed: ${JSON.stringify(good.content)}`);
  if (canonical(good.structuredContent) !== canonical(plan.good_result)) fail(`unexpected result ${JSON.stringify(good.structuredContent)}`);
  if (!good._meta?.[META]?.reply) fail("the result carries no signed CAP_RESULT");
  report.reply_bytes = Buffer.from(good._meta[META].reply, "base64").length;

  const bad = await client.callTool({ name: plan.tool, arguments: plan.bad_args });
  if (!bad.isError || bad._meta?.[META]?.code !== plan.violation_code) fail(`the schema violation answered ${JSON.stringify(bad)}`);
  report.violation_code = bad._meta?.[META]?.code;

  const tampered = await client.callTool({ name: plan.tampered_tool, arguments: plan.good_args });
  if (!tampered.isError || tampered._meta?.[META]?.code !== 5002) fail(`the tampered tool answered ${JSON.stringify(tampered)}`);
  report.tampered_code = 5002;
  report.ok = true;
} catch (e) {
  fail(`${e?.name ?? "error"}: ${e?.message ?? e}`);
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(report) + "\n");
