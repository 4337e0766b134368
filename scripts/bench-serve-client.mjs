// The load client of scripts/bench-serve.sh: concurrent clients against an OpenAI- or TEI-style
// server (attn serve, llama-server), each sending its next request once the last is answered.
// Prints one JSON line of what it measured. Node 20; nothing from npm.
//   node bench-serve-client.mjs completions URL CLIENTS REQUESTS MAX_TOKENS PROMPTS_FILE
//   node bench-serve-client.mjs first-token URL REQUESTS PROMPT_FILE
//   node bench-serve-client.mjs embed URL CLIENTS TEXTS_FILE [PER_REQUEST]
// PROMPTS_FILE, TEXTS_FILE: one text a line. REQUESTS: in all, shared by the clients.
import { readFileSync } from "node:fs";
import http from "node:http";

const [mode, url, ...rest] = process.argv.slice(2);
const lines = (file) => readFileSync(file, "utf8").split("\n").filter((line) => line.trim());

// node:http rather than fetch, whose overhead per request is larger than a small model's work.
// A connection per request, as attn serve closes each after its response (model_server.cpp).
const agent = new http.Agent({ keepAlive: false });
function post(path, body) {
  return new Promise((resolve, reject) => {
    const request = http.request(url + path, {
      method: "POST", agent, headers: { "Content-Type": "application/json" },
    }, (response) => {
      const chunks = [];
      response.on("data", (chunk) => { chunks.push(chunk); response.emit("piece", chunk); });
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString();
        if (response.statusCode !== 200) reject(new Error(`${path}: ${response.statusCode} ${text}`));
        else resolve(text);
      });
      if (body.stream) resolve(response);  // the caller reads the events as they come
    });
    request.on("error", reject);
    request.end(JSON.stringify(body));
  });
}

// Runs `requests` calls of `one(i)` over `clients` concurrent loops; returns the seconds taken.
async function run(clients, requests, one) {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = next++; i < requests; i = next++) await one(i);
    }),
  );
  return (performance.now() - start) / 1000;
}

if (mode === "completions") {
  const [clients, requests, maxTokens, promptsFile] = rest;
  const prompts = lines(promptsFile);
  let generated = 0;
  const seconds = await run(Number(clients), Number(requests), async (i) => {
    const response = await post("/v1/completions", {
      prompt: prompts[i % prompts.length],
      max_tokens: Number(maxTokens),
      temperature: 0,
      ignore_eos: true,
    });
    const { usage } = JSON.parse(response);  // parsed before the sum: clients run between
    generated += usage.completion_tokens;
  });
  console.log(JSON.stringify({ clients: Number(clients), requests: Number(requests), generated,
                               seconds, tokens_per_s: generated / seconds }));
} else if (mode === "first-token") {
  // Streamed completions one after another; the time from sending to the first text.
  const [requests, promptFile] = rest;
  const prompt = readFileSync(promptFile, "utf8");
  const times = [];
  for (let i = 0; i < Number(requests); ++i) {
    const start = performance.now();
    // cache_prompt false (llama-server's): the whole prompt computed each time.
    const response = await post("/v1/completions", {
      prompt, max_tokens: 2, temperature: 0, ignore_eos: true, stream: true, cache_prompt: false,
    });
    const first = await new Promise((resolve, reject) => {
      let seen = "";
      response.on("piece", (chunk) => {
        seen += chunk.toString();
        if (/"text":"[^"]/.test(seen)) resolve(performance.now() - start);
      });
      response.on("end", () => reject(new Error("the stream ended without text")));
    });
    await new Promise((resolve) => (response.complete ? resolve() : response.on("end", resolve)));
    times.push(first);
  }
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({ requests: times.length, median_ms: times[times.length >> 1],
                               min_ms: times[0] }));
} else if (mode === "embed") {
  // PER_REQUEST texts in each request (default 1): a list of them when more than 1.
  const [clients, textsFile, perRequest = "1"] = rest;
  const texts = lines(textsFile);
  const size = Number(perRequest);
  const requests = Math.ceil(texts.length / size);
  const seconds = await run(Number(clients), requests, async (i) => {
    const inputs = size === 1 ? texts[i] : texts.slice(i * size, (i + 1) * size);
    JSON.parse(await post("/embed", { inputs, truncate: true }));
  });
  console.log(JSON.stringify({ clients: Number(clients), texts: texts.length, per_request: size,
                               seconds, sentences_per_s: texts.length / seconds }));
} else {
  console.error("bench-serve-client.mjs: mode completions, first-token or embed");
  process.exit(2);
}
