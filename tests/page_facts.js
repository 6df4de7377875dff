// What a page shows after its load event, for tests/chromium.py: every href/src resolved,
// the ids anchors can name, each image's state, the sections with nothing visible beyond
// their headings, and the terms of definition lists whose text runs into their values'. Lazy images would never load in an unscrolled headless page, so
// they are made eager and given imageWaitMs to arrive.
async (imageWaitMs) => {
  const pending = [...document.images].filter(i => !i.complete);
  await Promise.all(pending.map(i => new Promise(done => {
    i.addEventListener("load", done); i.addEventListener("error", done);
    setTimeout(done, imageWaitMs); i.loading = "eager";
  })));
  const refs = [...document.querySelectorAll("[href], [src]")].flatMap(e =>
    ["href", "src"].filter(a => e.hasAttribute(a)).map(a => e.getAttribute(a)).map(raw =>
      ({tag: e.localName, raw, url: new URL(raw, document.baseURI).href})));
  const shown = e => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== "hidden";
  const text = e => [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
  const media = "img, svg, canvas, video, audio, iframe, object, embed, input, select, textarea";
  const inked = e => { const r = document.createRange(); r.selectNodeContents(e); return r.getBoundingClientRect(); };
  const crossed = (a, b) => a.width > 0 && b.width > 0 && a.left < b.right && b.left < a.right
    && a.top < b.bottom && b.top < a.bottom;
  const full = s => text(s) || [...s.querySelectorAll("*")].some(e =>
    !e.closest("h1, h2, h3, h4, h5, h6") && shown(e) && (e.matches(media) || text(e)));
  return {
    refs,
    ids: [...document.querySelectorAll("[id]")].map(e => e.id)
      .concat([...document.querySelectorAll("a[name]")].map(e => e.name)),
    images: [...document.images].map(i => ({
      raw: i.getAttribute("src") || "", url: i.src, complete: i.complete, width: i.naturalWidth,
    })),
    empty: [...document.querySelectorAll("section")].filter(s => !full(s)).map(s =>
      (s.querySelector("h1, h2, h3, h4, h5, h6") || {}).textContent || s.id || "(untitled)"),
    overprinted: [...document.querySelectorAll("dt")].filter(dt => {
      const dd = dt.nextElementSibling;
      return dd && dd.localName === "dd" && crossed(inked(dt), inked(dd));
    }).map(dt => dt.textContent.trim()),
  };
}
