// Types of use-lite-tokenizer.mjs (plain JavaScript, run by the model's worker thread).
export interface UseLiteTokenizer {
  /** SentencePiece ids of `text`, exactly as @energetic-ai/embeddings' Tokenizer gives them, in linear time. */
  encode(text: string): number[];
}
export function createTokenizer(vocabulary: ReadonlyArray<readonly [string, number]>): UseLiteTokenizer;
