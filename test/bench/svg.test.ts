import { describe, expect, test } from "bun:test";
import { escapeXml, markedIndices, niceTicks, svgCharts, tickLabel, type LineChart } from "./svg.ts";
import { all, hasClass, parseXml, unescapeXml } from "./testing.ts";


const chart: LineChart = {
  title: "ADD wave <110 pods> & more",
  xLabel: "time since the wave started (s)",
  yLabel: "pods networked",
  series: [
    { label: "resident", points: [[0, 0], [1, 50], [2, 110]], dash: "solid", marker: "circle" },
    { label: "Go 1.1.1", points: [[0, 0], [3, 60], [7.5, 110]], dash: "dotted", marker: "triangle" },
  ],
};

describe("SVG line charts", () => {
  test("nice ticks start at 0, reach the maximum, and step by 1, 2, 2.5 or 5 times a power of ten", () => {
    expect(niceTicks(7.5)).toEqual([0, 2, 4, 6, 8]);
    expect(niceTicks(110)).toEqual([0, 25, 50, 75, 100, 125]);
    expect(niceTicks(38_869)).toEqual([0, 10_000, 20_000, 30_000, 40_000]);
    expect(niceTicks(0.3)).toEqual([0, 0.1, 0.2, 0.3]);
    expect(niceTicks(0)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(Number.NaN)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(tickLabel(0.30000000000000004)).toBe("0.3");
    expect(tickLabel(20000)).toBe("20000");
  });

  test("markers: every point of a short series, about nine spread over a long one, the last included", () => {
    expect(markedIndices(4)).toEqual([0, 1, 2, 3]);
    const long = markedIndices(501);
    expect(long.length).toBe(9);
    expect(long[0]).toBe(0);
    expect(long.at(-1)).toBe(500);
  });

  test("escapes text", () => {
    expect(escapeXml(`a<b & "c">`)).toBe("a&lt;b &amp; &quot;c&quot;&gt;");
  });

  test("the image parses, with axes, ticks, labelled axes, a line and a legend entry per series", () => {
    const svg = parseXml(svgCharts([chart], "caption & note"));
    expect(svg.attrs.xmlns).toBe("http://www.w3.org/2000/svg");
    expect(svg.attrs.viewBox).toBe(`0 0 ${svg.attrs.width} ${svg.attrs.height}`);
    const texts = all(svg, (e) => e.name === "text").map((e) => unescapeXml(e.text));
    expect(texts).toContain("ADD wave <110 pods> & more");
    expect(texts).toContain("time since the wave started (s)");
    expect(texts).toContain("pods networked");
    expect(texts).toContain("caption & note");
    expect(all(svg, hasClass("x-tick")).map((e) => e.text)).toEqual(["0", "2", "4", "6", "8"]);
    expect(all(svg, hasClass("y-tick")).map((e) => e.text)).toEqual(["0", "25", "50", "75", "100", "125"]);
    expect(all(svg, hasClass("axis")).length).toBe(2);
    const yLabel = all(svg, hasClass("y-label"))[0]!;
    expect(yLabel.attrs.transform).toStartWith("rotate(-90");

    const lines = all(svg, hasClass("series"));
    expect(lines.map((l) => l.attrs["data-label"])).toEqual(["resident", "Go 1.1.1"]);
    // Told apart without colour: one solid, one dotted, and markers of different shapes.
    expect(lines[0]!.attrs["stroke-dasharray"]).toBeUndefined();
    expect(lines[1]!.attrs["stroke-dasharray"]).toBe("2 3");
    const markers = all(svg, hasClass("marker"));
    expect(markers.filter((m) => m.name === "circle").length).toBe(3 + 1); // its points and its legend entry
    expect(markers.filter((m) => m.name === "polygon").length).toBe(3 + 1);
    const legend = all(svg, hasClass("legend"));
    expect(legend.map((g) => g.children.find((c) => c.name === "text")!.text)).toEqual(["resident", "Go 1.1.1"]);
  });

  test("points land on the axes' scale: x from the left axis, y up from the bottom axis", () => {
    const svg = parseXml(svgCharts([chart]));
    const xAxis = all(svg, hasClass("x-axis"))[0]!;
    const left = Number(xAxis.attrs.x1);
    const right = Number(xAxis.attrs.x2);
    const bottom = Number(xAxis.attrs.y1);
    const top = Number(all(svg, hasClass("y-axis"))[0]!.attrs.y1);
    const points = (i: number) => all(svg, hasClass("series"))[i]!.attrs.points!.split(" ").map((p) => p.split(",").map(Number) as [number, number]);
    const go = points(1);
    expect(go[0]).toEqual([left, bottom]);
    // (7.5, 110) on axes that end at 8 and 125.
    expect(go[2]![0]).toBeCloseTo(left + ((right - left) * 7.5) / 8, 0);
    expect(go[2]![1]).toBeCloseTo(bottom - ((bottom - top) * 110) / 125, 0);
    const resident = points(0);
    expect(resident[1]![1]).toBeLessThan(resident[0]![1]);
  });

  test("panels stack: each has its own title and axes, and the image is as tall as all of them", () => {
    const two = parseXml(svgCharts([chart, { ...chart, title: "DEL wave" }]));
    const one = parseXml(svgCharts([chart]));
    expect(Number(two.attrs.height)).toBe(2 * Number(one.attrs.height));
    expect(all(two, hasClass("title")).map((e) => unescapeXml(e.text))).toEqual(["ADD wave <110 pods> & more", "DEL wave"]);
    expect(all(two, hasClass("axis")).length).toBe(4);
    const xAxes = all(two, hasClass("x-axis")).map((e) => Number(e.attrs.y1));
    expect(xAxes[1]! - xAxes[0]!).toBe(Number(one.attrs.height));
  });

  test("the reader used here rejects what is not well formed", () => {
    expect(() => parseXml(`<svg><g></svg>`)).toThrow();
    expect(() => parseXml(`<svg><text>a < b</text></svg>`)).toThrow();
    expect(() => parseXml(`<svg width=3></svg>`)).toThrow();
  });
});
