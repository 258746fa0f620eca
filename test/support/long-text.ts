// Long memories for the tests of long texts: deterministic prose about everyday topics (none about ferries or
// islands), with one given sentence placed in the middle.

const SUBJECTS = ["Maria", "The new manager", "My neighbour Tom", "Our landlord", "The chemistry teacher", "Grandpa", "The bakery owner", "Priya", "The football coach", "Uncle Ben", "The dentist", "Our band's drummer"];
const CLAUSES = [
  "spent the whole afternoon repainting the kitchen cabinets a soft shade of green",
  "complained again about the printer jamming during the monthly budget review",
  "baked three loaves of sourdough bread and gave one to the family downstairs",
  "argued that the quarterly sales figures were better than the spreadsheet suggested",
  "practised the violin concerto for two hours before the school recital",
  "rearranged the bookshelves by colour, which made finding anything impossible",
  "signed up for a pottery class that meets every second Thursday evening",
  "forgot the umbrella on the bus and arrived at the office soaking wet",
  "reviewed the insurance paperwork and found two mistakes in the billing address",
  "watched a documentary about honeybees and decided to plant more lavender",
  "repaired the squeaky hinge on the garage door with a drop of machine oil",
  "organised a surprise birthday dinner at the Italian restaurant on Elm Street",
  "lost the chess tournament in the final round after a long endgame",
  "ordered new running shoes because the old pair had worn through at the heel",
  "cleaned out the refrigerator and threw away a jar of very old pickles",
  "drafted a letter to the council about the broken streetlight near the school",
  "tried a new recipe for lentil soup with cumin, lemon and fresh coriander",
  "moved the houseplants closer to the window so they would get more sunlight",
];
const TAILS = ["last Monday", "over the weekend", "before breakfast", "after the meeting", "in the rain", "without telling anyone", "for the third time this month", "while humming an old song"];

/** `bytes` of prose (ASCII, so characters = bytes) with `needle` in the middle, deterministic for a given seed. */
export function longText(bytes: number, needle = "", seed = 1): string {
  let s = seed >>> 0 || 1;
  const pick = <T>(xs: readonly T[]) => xs[(s = (Math.imul(s, 1103515245) + 12345) >>> 0) % xs.length];
  const sentences: string[] = [];
  let size = 0;
  while (size < bytes - needle.length) {
    const sentence = `${pick(SUBJECTS)} ${pick(CLAUSES)} ${pick(TAILS)}.`;
    sentences.push(sentence);
    size += sentence.length + 1;
  }
  if (needle) sentences.splice(Math.floor(sentences.length / 2), 0, needle);
  return sentences.join(" ").slice(0, Math.max(bytes, needle.length + 1));
}
