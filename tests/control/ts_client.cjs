// The official TypeScript MCP SDK (npm @modelcontextprotocol/sdk) as a client
// of reterm: connects (the initialize handshake), lists the tools, calls
// list_sessions and an unknown tool, and prints what it got as one JSON line.
// The URL comes in RETE_URL and the token in RETE_TOKEN (the environment, not
// the argument vector, so no `ps` shows it); the SDK from $RETE_NODE_DIR.
const sdk = `${process.env.RETE_NODE_DIR}/node_modules/@modelcontextprotocol/sdk/dist/cjs`;
const { Client } = require(`${sdk}/client/index.js`);
const { StreamableHTTPClientTransport } = require(`${sdk}/client/streamableHttp.js`);

async function main() {
  const transport = new StreamableHTTPClientTransport(new URL(process.env.RETE_URL), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.RETE_TOKEN}` } },
  });
  const client = new Client({ name: "rete-ts-test", version: "1" });
  await client.connect(transport);
  const tools = (await client.listTools()).tools.map((t) => t.name).sort();
  const listed = await client.callTool({ name: "list_sessions", arguments: {} });
  const unknown = await client.callTool({ name: "nope", arguments: {} });
  const out = {
    protocolVersion: transport.protocolVersion,
    server: client.getServerVersion(),
    instructions: client.getInstructions(),
    tools,
    listed,
    unknown,
  };
  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((e) => {
  process.stderr.write(`ts_client: ${e && e.message}\n`);
  process.exit(1);
});
