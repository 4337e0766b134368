// The load client of scripts/bench-serve.sh: concurrent clients against an OpenAI- or TEI-style
// server (attn serve, llama-server), each sending its next request once the last is answered.
// Prints one JSON line of what it measured. Node 20 (its fetch); nothing from npm.
//   node bench-serve-client.mjs completions URL CLIENTS REQUESTS MAX_TOKENS PROMPTS_FILE
//   node bench-serve-client.mjs first-token URL REQUESTS PROMPT_FILE
//   node bench-serve-client.mjs embed URL CLIENTS TEXTS_FILE
// PROMPTS_FILE, TEXTS_FILE: one text a line. REQUESTS: in all, shared by the clients.
import { readFileSync } from "node:fs";

const [mode, url, ...rest] = process.argv.slice(2);
const lines = (file) => readFileSync(file, "utf8").split("\n").filter((line) => line.trim());

async function post(path, body) {
  const response = await fetch(url + path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return response;
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
    const { usage } = await response.json();  // awaited before the sum: clients run between
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
    const response = await post("/v1/completions", {
      prompt, max_tokens: 2, temperature: 0, ignore_eos: true, stream: true,
    });
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let seen = "";
    let first = null;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += decoder.decode(value, { stream: true });
      if (first === null && /"text":"[^"]/.test(seen)) first = performance.now() - start;
    }
    times.push(first);
  }
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({ requests: times.length, median_ms: times[times.length >> 1],
                               min_ms: times[0] }));
} else if (mode === "embed") {
  const [clients, textsFile] = rest;
  const texts = lines(textsFile);
  const seconds = await run(Number(clients), texts.length, async (i) => {
    await (await post("/embed", { inputs: texts[i] })).json();
  });
  console.log(JSON.stringify({ clients: Number(clients), texts: texts.length, seconds,
                               sentences_per_s: texts.length / seconds }));
} else {
  console.error("bench-serve-client.mjs: mode completions, first-token or embed");
  process.exit(2);
}
