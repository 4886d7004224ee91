import { describe, expect, test } from "bun:test";
import { burstChart, refusalsIn } from "./burst.ts";
import { perPodCostChart } from "./live-pods.ts";
import { all, hasClass, parseXml, unescapeXml } from "./testing.ts";

const seriesOf = (svg: string) =>
  all(parseXml(svg), hasClass("series")).map((e) => ({ label: unescapeXml(e.attrs["data-label"]!), dash: e.attrs["stroke-dasharray"], stroke: e.attrs.stroke, points: e.attrs.points!.split(" ").length }));

describe("the charts of a node's pods", () => {
  test("burst: an ADD and a DEL panel, a step line per implementation measured, each with its own dash", () => {
    const curves = {
      add: new Map([
        ["go", [100, 300, 200]],
        ["resident", [50, 80, 90]],
      ] as const),
      del: new Map([["go", [400, 500, 600]]] as const),
    };
    const svg = burstChart(3, curves, "2 rounds");
    const panels = all(parseXml(svg), hasClass("title")).map((e) => e.text);
    expect(panels).toEqual(["3 pods started at once: ADD wave", "3 pods torn down at once: DEL wave"]);
    const series = seriesOf(svg);
    // Implementations in a fixed order (standalone, resident, Go), the missing ones left out.
    expect(series.map((s) => s.label)).toEqual(["resident (agent)", "Go 1.1.1", "Go 1.1.1"]);
    expect(series[0]!.dash).not.toBe(series[1]!.dash);
    expect(series[1]!.points).toBe(1 + 2 * 3); // (0, 0) and a step per pod
    expect(svg).toContain("2 rounds");
  });

  test("per-pod cost: a line per implementation and command, ADD solid and DEL dashed, a point per level measured", () => {
    const s = {
      "add 0": { resident: [10, 12, 11], go: [40] },
      "del 0": { resident: [20], go: [50] },
      "add 500": { resident: [30] },
    };
    const series = seriesOf(perPodCostChart(s, "caption"));
    expect(series.map((x) => x.label)).toEqual([
      "standalone ADD",
      "standalone DEL",
      "resident (agent) ADD",
      "resident (agent) DEL",
      "Go 1.1.1 ADD",
      "Go 1.1.1 DEL",
    ]);
    const byLabel = new Map(series.map((x) => [x.label, x]));
    expect(byLabel.get("resident (agent) ADD")!.points).toBe(2);
    expect(byLabel.get("resident (agent) ADD")!.dash).toBeUndefined();
    expect(byLabel.get("resident (agent) DEL")!.dash).toBe("8 4");
    expect(byLabel.get("resident (agent) ADD")!.stroke).toBe(byLabel.get("resident (agent) DEL")!.stroke);
    expect(byLabel.get("Go 1.1.1 ADD")!.stroke).not.toBe(byLabel.get("resident (agent) ADD")!.stroke);
  });

  test("the agent's refusals by reason from its metrics, zeros left out", () => {
    const text = [
      "# TYPE cni_agent_refusals_total counter",
      'cni_agent_refusals_total{reason="draining"} 0',
      'cni_agent_refusals_total{reason="busy"} 12',
      'cni_agent_refusals_total{reason="timeout"} 3',
      'cni_plugin_calls_total{plugin="bridge",command="ADD",code="0"} 40',
    ].join("\n");
    expect([...refusalsIn(text)]).toEqual([
      ["busy", 12],
      ["timeout", 3],
    ]);
  });
});
