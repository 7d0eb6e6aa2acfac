/**
 * `chars` of seeded random lower-case "words" of 2–9 letters, a full stop after about one in ten: text whose every
 * letter 4-gram occurs, so no keyword gate of the injection scorer stays shut (every rule's regex runs). The same
 * `seed` gives the same text (a Lehmer generator); bench/adversarial.ts and the injection equivalence test share it.
 */
export function randomWords(chars: number, seed = 1): string {
  const rnd = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  let out = "";
  while (out.length < chars) {
    let w = "";
    const n = 2 + Math.floor(rnd() * 8);
    for (let i = 0; i < n; i++) w += String.fromCharCode(97 + Math.floor(rnd() * 26));
    out += w + (rnd() < 0.1 ? ". " : " ");
  }
  return out.slice(0, chars);
}
