/** What the bench's tests share: a strict reader of the SVG the chart writer produces (svg.ts). */

export interface Element {
  name: string;
  attrs: Record<string, string>;
  text: string;
  children: Element[];
}

/**
 * A strict reader of the XML the writer produces: the declaration, then elements whose attributes
 * are all double-quoted, every element closed in order, no raw '<' or '&' in text. Throws on
 * anything else.
 */
export function parseXml(xml: string): Element {
  const body = xml.replace(/^<\?xml [^?]*\?>\s*/, "");
  const root: Element = { name: "#document", attrs: {}, text: "", children: [] };
  const stack: Element[] = [root];
  const token = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/gy;
  let at = 0;
  for (let m = token.exec(body); m !== null; m = token.exec(body)) {
    at = token.lastIndex;
    const [, close, name, attrText, selfClose, text] = m;
    const top = stack.at(-1)!;
    if (text !== undefined) {
      if (/&(?!(amp|lt|gt|quot);)/.test(text)) throw new Error(`bare & in text: ${text}`);
      top.text += text;
      continue;
    }
    if (close === "/") {
      if (top.name !== name) throw new Error(`</${name}> closes <${top.name}>`);
      stack.pop();
      continue;
    }
    const attrs = Object.fromEntries([...attrText!.matchAll(/([\w:-]+)="([^"]*)"/g)].map((a) => [a[1]!, a[2]!]));
    const el: Element = { name: name!, attrs, text: "", children: [] };
    top.children.push(el);
    if (selfClose !== "/") stack.push(el);
  }
  if (at !== body.length) throw new Error(`cannot read from ${at}: ${body.slice(at, at + 40)}`);
  if (stack.length !== 1) throw new Error(`<${stack.at(-1)!.name}> is not closed`);
  if (root.children.length !== 1 || root.children[0]!.name !== "svg") throw new Error("the document is not one <svg> element");
  return root.children[0]!;
}

export function all(el: Element, pred: (e: Element) => boolean): Element[] {
  return [...(pred(el) ? [el] : []), ...el.children.flatMap((c) => all(c, pred))];
}
export const hasClass = (c: string) => (e: Element) => (e.attrs.class ?? "").split(" ").includes(c);
export const unescapeXml = (t: string) => t.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&amp;/g, "&");
