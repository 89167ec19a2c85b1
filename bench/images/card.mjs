// The share card both Node peers draw with @vercel/og (bench/images/peer.mjs
// and bench/og-peer/server.mjs), following Plaza's layout: dark fill, a
// coloured border, ~20 translucent seeded shapes (discs, rings, squares,
// bars), the seed's avatar in a circle on the left, the quote wrapped in a
// 650 px column on the right and the author below.
//
// It imports nothing, so each peer resolves React and DiceBear from its own
// node_modules: `h` is React.createElement and `avatarSvg` the seed's
// 300 px avatar as SVG text.

const PALETTE = ["#ff6b35", "#118ab2", "#06d6a0", "#f72585", "#7209b7", "#ffd60a", "#f77f00", "#d00000"];

export function card(h, avatarSvg, seed, quote, author) {
  let state = 0;
  for (const c of seed) state = (state * 31 + c.charCodeAt(0)) >>> 0;
  const rnd = (n) => {
    state = (state * 1103515245 + 12345) >>> 0;
    return (state >>> 8) % n;
  };
  const shapes = [];
  for (let i = 0; i < 20; i++) {
    const colour = PALETTE[rnd(8)];
    const size = 30 + rnd(200);
    const kind = rnd(4);
    shapes.push(
      h("div", {
        key: i,
        style: {
          position: "absolute",
          left: rnd(1200) - 100,
          top: rnd(630) - 100,
          width: kind === 3 ? 600 : size,
          height: kind === 3 ? 6 : size,
          borderRadius: kind < 2 ? size : 0,
          background: kind === 1 ? "transparent" : colour,
          border: kind === 1 ? `4px solid ${colour}` : "none",
          opacity: 0.25,
          transform: `rotate(${rnd(90)}deg)`,
        },
      }),
    );
  }
  const avatarUri = `data:image/svg+xml;base64,${Buffer.from(avatarSvg).toString("base64")}`;
  const text = [h("div", { key: "q", style: { color: "#f5f5fa", fontSize: 54, textAlign: "center", lineHeight: 1.3 } }, `“${quote}”`)];
  if (author) text.push(h("div", { key: "a", style: { color: "#c9cbe0", fontSize: 34, marginTop: 40 } }, `— ${author}`));
  return h(
    "div",
    {
      style: {
        width: 1200,
        height: 630,
        display: "flex",
        position: "relative",
        background: "#0b0d17",
        border: `16px solid ${PALETTE[rnd(8)]}`,
        borderRadius: 20,
        alignItems: "center",
        fontFamily: "geist",
      },
    },
    ...shapes,
    h("img", { src: avatarUri, width: 300, height: 300, style: { position: "absolute", left: 100, top: 149, borderRadius: 150 } }),
    h(
      "div",
      { style: { position: "absolute", left: 434, top: 74, width: 650, height: 450, display: "flex", flexDirection: "column", alignItems: "center", justifyContent: "center" } },
      ...text,
    ),
  );
}
