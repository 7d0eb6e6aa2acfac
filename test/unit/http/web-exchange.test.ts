import { createServer, type IncomingMessage, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { serveWebExchange, type FetchOptions, type WebHandler } from "../../../src/http/web-exchange.js";

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
});

/** An express app (with or without the JSON body parser) serving every POST through `handler`. */
async function serve(handler: WebHandler, parseJson = true, onerror?: (e: Error) => void): Promise<string> {
  const app = express();
  if (parseJson) app.use(express.json());
  app.post("/mcp", (req, res) => void serveWebExchange(handler, req as IncomingMessage & { body?: unknown }, res, { ...(onerror && { onerror }), maxRequestBodySize: 64 }));
  const http = createServer(app);
  servers.push(http);
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
}

describe("serveWebExchange (the modern era's Node -> Web step)", () => {
  it("hands the handler a bodyless Request with the headers and URL, the parsed body beside it, and writes its JSON answer", async () => {
    const seen: { request?: Request; options?: FetchOptions; body?: string } = {};
    const url = await serve({
      fetch: async (request, options) => {
        seen.request = request;
        seen.options = options;
        seen.body = await request.text();
        return Response.json({ jsonrpc: "2.0", id: 7, result: { echoed: (options?.parsedBody as { params: unknown }).params } }, { status: 200, headers: { "x-answer": "yes" } });
      },
    });
    const body = { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "t", arguments: { text: "é ✓ 𝄞" } } };
    const res = await fetch(`${url}?q=1`, { method: "POST", headers: { "content-type": "application/json", "mcp-method": "tools/call" }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-answer")).toBe("yes");
    expect(await res.json()).toEqual({ jsonrpc: "2.0", id: 7, result: { echoed: body.params } });
    expect(seen.options?.parsedBody).toEqual(body);
    expect(seen.body).toBe("");
    expect(seen.request!.method).toBe("POST");
    expect(new URL(seen.request!.url).pathname + new URL(seen.request!.url).search).toBe("/mcp?q=1");
    expect(seen.request!.headers.get("mcp-method")).toBe("tools/call");
    expect(seen.request!.headers.get("content-type")).toBe("application/json");
    // the headers that described the body the Request does not carry
    expect(seen.request!.headers.get("content-length")).toBeNull();
  });

  it("gives the handler a repeated Content-Type, Host or Authorization as Node parsed it (the first value), and answers JSON with its length", async () => {
    let seen: Headers | undefined;
    const url = new URL(
      await serve({
        fetch: async (request) => {
          seen = request.headers;
          return Response.json({ ok: true });
        },
      }),
    );
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(
          `POST /mcp HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\nContent-Type: application/json\r\nContent-Type: application/json\r\n` +
            `Authorization: Bearer one\r\nAuthorization: Bearer two\r\nX-Many: a\r\nX-Many: b\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      });
      let out = "";
      socket.on("data", (d) => (out += d.toString("latin1")));
      socket.on("end", () => resolve(out));
      socket.on("error", reject);
    });
    expect(raw.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
    expect(seen!.get("host")).toBe("localhost");
    expect(seen!.get("content-type")).toBe("application/json");
    expect(seen!.get("authorization")).toBe("Bearer one");
    // headers Node joins stay joined
    expect(seen!.get("x-many")).toBe("a, b");
    const head = raw.slice(0, raw.indexOf("\r\n\r\n")).toLowerCase();
    expect(head).toContain(`content-length: ${Buffer.byteLength(JSON.stringify({ ok: true }))}`);
    expect(head).not.toContain("transfer-encoding");
  });

  it("reads the body into the Request when no body parser ran, and answers 413 over maxRequestBodySize", async () => {
    let text: string | undefined;
    const url = await serve(
      {
        fetch: async (request, options) => {
          text = await request.text();
          expect(options?.parsedBody).toBeUndefined();
          return new Response(null, { status: 202 });
        },
      },
      false,
    );
    const small = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: '{"a":1}' });
    expect(small.status).toBe(202);
    expect(text).toBe('{"a":1}');
    const large = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ a: "x".repeat(200) }) });
    expect(large.status).toBe(413);
    expect(((await large.json()) as { error: { code: number } }).error.code).toBe(-32000);
  });

  it("streams an event-stream answer chunk by chunk", async () => {
    const url = await serve({
      fetch: async () => {
        const enc = new TextEncoder();
        let n = 0;
        const body = new ReadableStream<Uint8Array>({
          pull: async (c) => {
            await new Promise((r) => setTimeout(r, 5));
            if (n < 3) c.enqueue(enc.encode(`data: ${n++}\n\n`));
            else c.close();
          },
        });
        return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
      },
    });
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(await res.text()).toBe("data: 0\n\ndata: 1\n\ndata: 2\n\n");
  });

  it("answers 500 with a JSON-RPC internal error echoing the request's id when the handler throws, and tells onerror", async () => {
    const errors: Error[] = [];
    const url = await serve({ fetch: async () => Promise.reject(new TypeError("boom")) }, true, (e) => errors.push(e));
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: "r-1", method: "tools/list" }) });
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ jsonrpc: "2.0", error: { code: -32603, message: "Internal server error" }, id: "r-1" });
    expect(errors.map((e) => e.message)).toEqual(["boom"]);
  });

  it("aborts the Request's signal when the client goes before the answer", async () => {
    let aborted: Promise<void> | undefined;
    let called = false;
    const url = await serve({
      fetch: (request) => {
        called = true;
        aborted = new Promise<void>((resolve) => request.signal.addEventListener("abort", () => resolve(), { once: true }));
        return aborted.then(() => new Response(null, { status: 204 }));
      },
    });
    const ac = new AbortController();
    const pending = fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: "{}", signal: ac.signal }).catch((e: unknown) => e);
    await expect.poll(() => called).toBe(true);
    ac.abort();
    await pending;
    await expect(aborted).resolves.toBeUndefined();
  });
});
