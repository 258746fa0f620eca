// Which language model serves analyze and ask: an OpenAI-compatible endpoint when configured, else the local one.
import type { LanguageModelPort } from "../ports.ts";
import type { RelayerConfig } from "../../config/env.ts";
import { LocalLanguageModel } from "./local.ts";
import { OpenAILanguageModel } from "./openai.ts";

export function createLanguageModel(llm: RelayerConfig["llm"]): LanguageModelPort {
  return llm ? new OpenAILanguageModel(llm) : new LocalLanguageModel();
}
