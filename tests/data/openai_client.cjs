// The official `openai` npm client against attn serve (tests/test_serve.cpp,
// ServeTest.OpenAiClient): each call's result, one JSON line each, for the test to compare with
// what the attn commands give.
//   NODE_PATH=DIR/node_modules node openai_client.cjs BASE_URL MODE   (MODE: decoder or encoder)
const { OpenAI } = require("openai");

const [baseURL, mode] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 60000 });
const print = (name, value) => console.log(JSON.stringify({ name, value }));

async function main() {
if (mode === "decoder") {
  const messages = [{ role: "user", content: "Tell me about the jury." }];
  const chat = await client.chat.completions.create({
    model: "attn", messages, max_tokens: 10, temperature: 0,
  });
  print("chat", chat.choices[0].message.content);
  const stream = await client.chat.completions.create({
    model: "attn", messages, max_tokens: 10, temperature: 0, stream: true,
  });
  let streamed = "";
  for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? "";
  print("chat_stream", streamed);
  const completion = await client.completions.create({
    model: "attn", prompt: "The jury said", max_tokens: 12, temperature: 0,
  });
  print("completion", completion.choices[0].text);
  print("usage", completion.usage);
} else {
  const result = await client.embeddings.create({
    model: "attn", input: ["The jury met.", "It rained all day."],
  });
  print("embeddings", result.data.map((item) => item.embedding));
}
}

main().catch((error) => {
  console.error(String(error));
  process.exit(1);
});
