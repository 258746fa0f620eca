// USE-lite's SentencePiece tokenizer in linear time. Plain JavaScript: the model's worker thread (use-lite-worker.mjs)
// runs it without a TypeScript loader; use-lite-tokenizer.d.mts gives the types.
//
// Why not the package's own: @energetic-ai/embeddings' Tokenizer copies the rest of the text at every position
// (`symbols.slice(i)`), so it costs O(n²) in the text's length: 16 KiB took 0.2 s, 32 KiB 16 s, 48 KiB 62 s on this
// machine, while the model itself embeds 1 MiB of tokens in 0.4 s. This one walks the same trie from each position
// in place and keeps the package's Viterbi exactly (same candidates, same order, same tie-breaking, same
// backtracking by the vocabulary piece's UTF-16 length), so every text gets the same token ids as before and
// stored vectors stay comparable (test/embeddings.test.ts compares the two).

const SEPARATOR = "\u2581";
const RESERVED_SYMBOLS = 6;

/** A trie node: children by symbol (a Map, so no symbol can meet an Object.prototype key), and the piece ending here. */
function node() {
  return { children: new Map(), index: -1, score: 0, length: 0 };
}

/** @param {ReadonlyArray<readonly [string, number]>} vocabulary [piece, score] pairs; the id is the position. */
export function createTokenizer(vocabulary) {
  const root = node();
  for (let id = RESERVED_SYMBOLS; id < vocabulary.length; id++) {
    const [piece, score] = vocabulary[id];
    let n = root;
    let length = 0;
    for (const symbol of piece) {
      let child = n.children.get(symbol);
      if (!child) n.children.set(symbol, (child = node()));
      n = child;
      length++;
    }
    if (length === 0) continue;
    n.index = id;
    n.score = score;
    n.length = length;
  }

  /** @param {string} text @returns {number[]} */
  function encode(text) {
    const normalised = text.normalize("NFKC");
    const input = normalised.length > 0 ? SEPARATOR + normalised.replace(/ /g, SEPARATOR) : normalised;
    const symbols = Array.from(input);
    const n = symbols.length;
    // Candidates ending at each position, in ascending start order (the order the package's lattice visits them).
    /** @type {number[][]} start, score, id triples, flattened */
    const ending = Array.from({ length: n + 1 }, () => []);
    for (let i = 0; i < n; i++) {
      let t = root.children.get(symbols[i]);
      let matched = false;
      for (let j = i; j < n && t; j++) {
        if (t.index >= 0) {
          ending[j + 1].push(i, t.score, t.index);
          matched = true;
        }
        t = t.children.get(symbols[j + 1]);
      }
      // No piece starts here: the unknown piece (id 0, score 0) covers one symbol.
      if (!matched) ending[i + 1].push(i, 0, 0);
    }
    const best = new Float64Array(n + 1);
    const words = new Int32Array(n + 1);
    for (let end = 0; end <= n; end++) {
      const c = ending[end];
      for (let k = 0; k < c.length; k += 3) {
        const score = c[k + 1] + best[c[k]];
        if (best[end] === 0 || score >= best[end]) {
          best[end] = score;
          words[end] = c[k + 2];
        }
      }
    }
    const ids = [];
    for (let at = n; at > 0; at -= vocabulary[words[at]][0].length) ids.push(words[at]);
    const merged = [];
    let previousUnknown = false;
    for (const id of ids) {
      if (!(previousUnknown && id === 0)) merged.push(id);
      previousUnknown = id === 0;
    }
    return merged.reverse();
  }

  return { encode };
}
